//! Tests of the group-profile statements: replaced and deleted whole, listed by page, and a
//! database from before group profiles gains their table when opened.

use crate::store::groups::StoredGroup;
use crate::store::sqlite::groups::*;
use crate::store::sqlite::{tables, Sqlite as Store, Synchronous};
use rusqlite::Connection;

/// Group profiles: replaced and deleted whole, listed a page at a time in key and id order, of
/// one `group_key` or all; a database from before them gains their table when opened.
#[test]
fn group_profiles_are_stored_and_listed_by_page() {
    let props = |n: i64| serde_json::json!({"n": n}).as_object().cloned().unwrap();
    let store = Store::open_in_memory().unwrap();
    store
        .call_sync(|conn| {
            conn.execute("INSERT INTO projects (id, name, token_hash) VALUES (1, 'p', 'h')", []).unwrap();
        for (key, id, n) in [("Company", "b", 1), ("Company", "a", 2), ("Team", "a", 3), ("Company", "c", 4)] {
            put_group(conn, 1, key, id, &props(n)).unwrap();
        }
        put_group(conn, 1, "Company", "c", &props(5)).unwrap();
        assert_eq!(get_group(conn, 1, "Company", "c").unwrap(), Some(props(5)));
        assert_eq!(get_group(conn, 1, "Team", "c").unwrap(), None);
        let names = |groups: Vec<StoredGroup>| groups.into_iter().map(|g| format!("{}/{}", g.key, g.id)).collect::<Vec<_>>();
        assert_eq!(names(list_groups(conn, 1, None, None, 10).unwrap()), ["Company/a", "Company/b", "Company/c", "Team/a"]);
        assert_eq!(names(list_groups(conn, 1, None, Some(("Company", "b")), 2).unwrap()), ["Company/c", "Team/a"]);
        assert_eq!(names(list_groups(conn, 1, Some("Company"), Some(("Company", "a")), 10).unwrap()), ["Company/b", "Company/c"]);
        assert!(delete_group(conn, 1, "Company", "a").unwrap());
        assert!(!delete_group(conn, 1, "Company", "a").unwrap());
        assert_eq!(list_groups(conn, 1, Some("Company"), None, 10).unwrap().len(), 2);
        // As a database from before group profiles: the table is created again when opened.
        conn.execute_batch("DROP TABLE group_profiles").unwrap();
            Ok(())
        })
        .unwrap();
    let mut conn = Connection::open_in_memory().unwrap();
    tables::create(&mut conn).unwrap();
    conn.execute_batch("DROP TABLE group_profiles").unwrap();
    let conn = Store::init_writer(conn, Synchronous::Full).unwrap();
    let tables: i64 = conn.query_row("SELECT count(*) FROM sqlite_master WHERE name = 'group_profiles'", [], |r| r.get(0)).unwrap();
    assert_eq!(tables, 1);
}
