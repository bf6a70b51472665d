//! The backend-neutral connection that `Store::call`, `Store::read` and `Store::call_sync` hand
//! to the `store::foo` functions, and its transaction.
//!
//! Handlers write `store.call(|conn| { let tx = conn.transaction()?; store::foo(&tx, ..)?;
//! tx.commit() })` whichever database runs: [`Conn`] is an enum over a SQLite connection and a
//! PostgreSQL client, each `store::foo` matches on it once (see [`dispatch`]), and [`Tx`] derefs
//! to a [`Conn`] so that the same functions run inside a transaction.

use std::cell::RefCell;

/// A connection of the running store. SQLite's statements take `&Connection`; PostgreSQL's
/// client takes `&mut` for every statement, so it sits in a `RefCell`: the store's functions
/// take `&Conn` (as they took `&rusqlite::Connection`) and borrow the client for one statement
/// or one function at a time.
pub enum Conn<'a> {
    Sqlite(&'a rusqlite::Connection),
    Postgres(RefCell<&'a mut postgres::Client>),
}

impl std::fmt::Debug for Conn<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Sqlite(_) => "Conn::Sqlite",
            Self::Postgres(_) => "Conn::Postgres",
        })
    }
}

impl<'a> Conn<'a> {
    /// Begins a transaction (SQLite: `BEGIN DEFERRED`, as rusqlite's `transaction` does;
    /// PostgreSQL: `BEGIN`, read committed). Dropping the [`Tx`] without [`Tx::commit`] rolls it
    /// back.
    pub fn transaction(&mut self) -> anyhow::Result<Tx<'_, 'a>> {
        let sqlite = match self {
            // `&mut self` already rules out a second transaction on this connection, which is
            // what rusqlite's checked `transaction` enforces.
            Conn::Sqlite(c) => {
                let c: &'a rusqlite::Connection = c;
                Some(c.unchecked_transaction()?)
            }
            Conn::Postgres(c) => {
                c.get_mut().batch_execute("BEGIN")?;
                None
            }
        };
        Ok(Tx {
            conn: self,
            sqlite,
            open: true,
        })
    }

    /// The SQLite connection, for code that exists on SQLite only; on PostgreSQL an error naming
    /// `what` (the store refuses to start on PostgreSQL when such code is reachable, see
    /// `pg::MISSING`).
    pub fn sqlite(&self, what: &str) -> anyhow::Result<&'a rusqlite::Connection> {
        match self {
            Conn::Sqlite(c) => Ok(*c),
            Conn::Postgres(_) => anyhow::bail!("{what} are not implemented on PostgreSQL yet; run this server on SQLite (--data-dir)"),
        }
    }
}

/// A transaction on a [`Conn`]; it derefs to that connection, so `store::foo(&tx, ..)` runs in it.
pub struct Tx<'t, 'a> {
    conn: &'t mut Conn<'a>,
    sqlite: Option<rusqlite::Transaction<'a>>,
    open: bool,
}

impl std::fmt::Debug for Tx<'_, '_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tx").field("conn", &self.conn).field("open", &self.open).finish()
    }
}

impl<'a> std::ops::Deref for Tx<'_, 'a> {
    type Target = Conn<'a>;
    fn deref(&self) -> &Conn<'a> {
        self.conn
    }
}

impl Tx<'_, '_> {
    pub fn commit(mut self) -> anyhow::Result<()> {
        self.open = false;
        match self.sqlite.take() {
            Some(tx) => tx.commit()?,
            None => {
                if let Conn::Postgres(c) = &mut *self.conn {
                    c.get_mut().batch_execute("COMMIT")?;
                }
            }
        }
        Ok(())
    }
}

impl Drop for Tx<'_, '_> {
    fn drop(&mut self) {
        // SQLite's transaction rolls itself back when dropped.
        if self.open && self.sqlite.is_none() {
            if let Conn::Postgres(c) = &mut *self.conn {
                // A failed rollback leaves the client in an aborted transaction; the pool checks
                // for that before it hands the client out again.
                if let Err(e) = c.get_mut().batch_execute("ROLLBACK") {
                    tracing::warn!("a rollback failed: {e}");
                }
            }
        }
    }
}

/// Runs `$module::$f` of the backend of `$conn` with the remaining arguments: `sqlite::$module::$f`
/// with the `&rusqlite::Connection`, `pg::$module::$f` with the `&mut postgres::Client`.
macro_rules! dispatch {
    ($conn:expr, $module:ident :: $f:ident ( $($arg:expr),* $(,)? )) => {
        match $conn {
            $crate::store::Conn::Sqlite(c) => $crate::store::sqlite::$module::$f(c, $($arg),*),
            $crate::store::Conn::Postgres(c) => $crate::store::pg::$module::$f(&mut c.borrow_mut(), $($arg),*),
        }
    };
}
pub(crate) use dispatch;
