//! Tests of the lookup-table statements: a replace is all or nothing, pages follow the keys, and a
//! database from before lookup tables gains them when opened.

use crate::store::lookup::{Created, NewRow};
use crate::store::sqlite::lookup::*;
use crate::store::sqlite::{Sqlite as Store, Synchronous};
use rusqlite::Connection;

const ID: &str = "0b6f3c2e-8d1a-4f5e-9c7b-2a4d6e8f0a1b";

fn rows(keys: &[&str]) -> Vec<NewRow> {
    keys.iter().map(|k| NewRow { key: (*k).to_owned(), record: serde_json::json!([k, format!("v-{k}")]).to_string() }).collect()
}

fn cols(names: &[&str]) -> Vec<String> {
    names.iter().map(|n| (*n).to_owned()).collect()
}

fn keys(conn: &Connection, after: Option<&str>, limit: usize) -> Vec<String> {
    read_rows(conn, ID, after, limit).unwrap().into_iter().map(|r| r.key).collect()
}

/// A store with project 1 and an empty table `ID` named `accounts`.
fn with_table(test: impl FnOnce(&mut Connection)) {
    let store = Store::open_in_memory().unwrap();
    store
        .call_sync(|conn| {
            conn.execute("INSERT INTO projects (id, name, token_hash) VALUES (1, 'p', 'h'), (2, 'q', 'i')", []).unwrap();
            assert!(matches!(create_table(conn, 1, ID, "accounts", 5).unwrap(), Created::Created(_)));
            test(conn);
            Ok(())
        })
        .unwrap();
}

#[test]
fn a_replace_stores_the_rows_and_the_header_and_drops_the_old_rows() {
    with_table(|conn| {
        let t = replace_rows(conn, 1, ID, &cols(&["id", "v"]), &rows(&["b", "a", "c"]), 10).unwrap().unwrap();
        assert_eq!((t.columns, t.row_count, t.created_at, t.updated_at), (cols(&["id", "v"]), 3, 5, 10));
        assert_eq!(keys(conn, None, 10), ["a", "b", "c"]);
        let t = replace_rows(conn, 1, ID, &cols(&["key", "w", "x"]), &rows(&["z"]), 20).unwrap().unwrap();
        assert_eq!((t.columns, t.row_count), (cols(&["key", "w", "x"]), 1));
        assert_eq!(keys(conn, None, 10), ["z"]);
        assert_eq!(read_rows(conn, ID, None, 1).unwrap()[0].record, r#"["z","v-z"]"#);
    });
}

#[test]
fn a_failed_replace_changes_nothing() {
    with_table(|conn| {
        replace_rows(conn, 1, ID, &cols(&["id", "v"]), &rows(&["a", "b"]), 10).unwrap();
        // A duplicate key fails the insert after the old rows were deleted in the transaction.
        let err = replace_rows(conn, 1, ID, &cols(&["id"]), &rows(&["x", "y", "x"]), 20).unwrap_err();
        assert!(format!("{err:#}").contains("key `x`"), "{err:#}");
        assert_eq!(keys(conn, None, 10), ["a", "b"]);
        let t = get_table(conn, 1, ID).unwrap().unwrap();
        assert_eq!((t.columns, t.row_count, t.updated_at), (cols(&["id", "v"]), 2, 10));
    });
}

#[test]
fn another_projects_table_is_not_found() {
    with_table(|conn| {
        assert_eq!(replace_rows(conn, 2, ID, &cols(&["id"]), &rows(&["a"]), 10).unwrap(), None);
        assert_eq!(get_table(conn, 2, ID).unwrap(), None);
        assert!(!delete_table(conn, 2, ID).unwrap());
        assert_eq!(keys(conn, None, 10), Vec::<String>::new());
        assert_eq!(list_tables(conn, 2).unwrap(), vec![]);
        assert_eq!(list_tables(conn, 1).unwrap().len(), 1);
    });
}

#[test]
fn names_are_unique_per_project() {
    with_table(|conn| {
        let other = "1b6f3c2e-8d1a-4f5e-9c7b-2a4d6e8f0a1b";
        assert_eq!(create_table(conn, 1, other, "accounts", 6).unwrap(), Created::NameTaken(ID.into()));
        assert!(matches!(create_table(conn, 2, other, "accounts", 6).unwrap(), Created::Created(_)));
    });
}

#[test]
fn pages_follow_the_keys_in_byte_order() {
    with_table(|conn| {
        // Upper case sorts before lower case, and `é` (two bytes from 0xC3) after every ASCII key.
        replace_rows(conn, 1, ID, &cols(&["id"]), &rows(&["b", "é", "a", "B", "a1"]), 10).unwrap();
        assert_eq!(keys(conn, None, 2), ["B", "a"]);
        assert_eq!(keys(conn, Some("a"), 2), ["a1", "b"]);
        assert_eq!(keys(conn, Some("b"), 2), ["é"]);
        assert_eq!(keys(conn, Some("é"), 2), Vec::<String>::new());
        // A cursor need not be a stored key.
        assert_eq!(keys(conn, Some("a0"), 1), ["a1"]);
    });
}

#[test]
fn deleting_a_table_deletes_its_rows() {
    with_table(|conn| {
        replace_rows(conn, 1, ID, &cols(&["id"]), &rows(&["a", "b"]), 10).unwrap();
        assert!(delete_table(conn, 1, ID).unwrap());
        let left: i64 = conn.query_row("SELECT count(*) FROM lookup_rows", [], |r| r.get(0)).unwrap();
        assert_eq!(left, 0);
        assert_eq!(get_table(conn, 1, ID).unwrap(), None);
    });
}

/// A database written before lookup tables existed (the same tables without these two) gains them
/// when a store opens it, and keeps its data.
#[test]
fn an_older_database_gains_the_tables() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.sqlite3");
    {
        let store = Store::open_with(&path, Synchronous::Full).unwrap();
        store
            .call_sync(|conn| {
                conn.execute("INSERT INTO projects (id, name, token_hash) VALUES (1, 'p', 'h')", [])?;
                conn.execute_batch("DROP TABLE lookup_rows; DROP TABLE lookup_tables;")?;
                Ok(())
            })
            .unwrap();
    }
    let store = Store::open_with(&path, Synchronous::Full).unwrap();
    store
        .call_sync(|conn| {
            let projects: i64 = conn.query_row("SELECT count(*) FROM projects", [], |r| r.get(0))?;
            assert_eq!(projects, 1);
            assert!(matches!(create_table(conn, 1, ID, "accounts", 5)?, Created::Created(_)));
            replace_rows(conn, 1, ID, &cols(&["id"]), &rows(&["a"]), 10)?;
            assert_eq!(keys(conn, None, 10), ["a"]);
            Ok(())
        })
        .unwrap();
}
