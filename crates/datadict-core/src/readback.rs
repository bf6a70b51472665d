//! The answers of a datadict server's read API, as its clients read them: user and group
//! profiles, pages of group profiles, lookup tables and pages of their rows. The spec's service
//! has no such API; these shapes are the server's (`routes::data`, `routes::lookup::app`), and
//! they live here so that the web app and the tests read them with one set of types. The server
//! writes them with its own types, which the end-to-end tests read back through these.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// `{"$distinct_id": "...", "$properties": {...}}`: one user profile.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UserProfile {
    #[serde(rename = "$distinct_id")]
    pub distinct_id: String,
    #[serde(rename = "$properties")]
    pub properties: Map<String, Value>,
}

/// `{"$group_key": "...", "$group_id": "...", "$properties": {...}}`: one group profile.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GroupProfile {
    #[serde(rename = "$group_key")]
    pub group_key: String,
    #[serde(rename = "$group_id")]
    pub group_id: String,
    #[serde(rename = "$properties")]
    pub properties: Map<String, Value>,
}

/// `{"results": T, "status": "ok"}`: the answer of a read of one thing (a profile, a group, the
/// list of lookup tables).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Results<T> {
    pub results: T,
}

/// A page of group profiles in `$group_key` then `$group_id` order; `next_after` (`null` on the
/// last page) is passed as `after` for the next.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GroupsPage {
    pub results: Vec<GroupProfile>,
    pub next_after: Option<String>,
}

/// A lookup table without its rows; times are milliseconds since the epoch, `columns` the header
/// of the last CSV stored (empty until the first).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LookupTable {
    pub id: String,
    pub name: String,
    pub columns: Vec<String>,
    pub row_count: i64,
    pub created_at: i64,
    pub updated_at: i64,
}

/// A lookup table with one page of its rows, each row its CSV record (the key first, in the order
/// of `columns`). The table's fields are written out rather than a flattened [`LookupTable`]:
/// serde's `flatten` buffers every field through a generic value, which costs the web app's wasm
/// more than these lines.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LookupTableRows {
    pub id: String,
    pub name: String,
    pub columns: Vec<String>,
    pub row_count: i64,
    pub created_at: i64,
    pub updated_at: i64,
    pub rows: Vec<Vec<String>>,
}

impl LookupTableRows {
    /// The table without its rows, and the rows.
    pub fn split(self) -> (LookupTable, Vec<Vec<String>>) {
        let Self {
            id,
            name,
            columns,
            row_count,
            created_at,
            updated_at,
            rows,
        } = self;
        (
            LookupTable {
                id,
                name,
                columns,
                row_count,
                created_at,
                updated_at,
            },
            rows,
        )
    }
}

/// A page of a lookup table's rows in the order of their keys; `next_cursor` (`null` on the last
/// page) is passed as `cursor` for the next.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LookupTablePage {
    pub results: LookupTableRows,
    pub next_cursor: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_servers_answers_read_into_these_types() {
        let group: Results<GroupProfile> =
            serde_json::from_value(json!({"results": {"$group_key": "Company", "$group_id": "acme", "$properties": {"plan": "pro"}}, "status": "ok"})).unwrap();
        assert_eq!(group.results.group_id, "acme");
        assert_eq!(group.results.properties["plan"], "pro");
        let page: GroupsPage =
            serde_json::from_value(json!({"results": [], "next_after": null, "status": "ok"}))
                .unwrap();
        assert_eq!(page.next_after, None);
        let table = json!({"id": "t", "name": "Plans", "columns": ["id", "tier"], "row_count": 2, "created_at": 1, "updated_at": 2});
        let list: Results<Vec<LookupTable>> =
            serde_json::from_value(json!({"results": [table], "status": "ok"})).unwrap();
        assert_eq!(list.results[0].row_count, 2);
        let mut rows = table.clone();
        rows["rows"] = json!([["1", "gold"]]);
        let page: LookupTablePage =
            serde_json::from_value(json!({"results": rows, "next_cursor": "1", "status": "ok"}))
                .unwrap();
        let (table, rows) = page.results.split();
        assert_eq!(table.name, "Plans");
        assert_eq!(rows, [["1", "gold"]]);
        assert_eq!(page.next_cursor.as_deref(), Some("1"));
        let profile: Results<UserProfile> = serde_json::from_value(
            json!({"results": {"$distinct_id": "u1", "$properties": {}}, "status": "ok"}),
        )
        .unwrap();
        assert_eq!(profile.results.distinct_id, "u1");
    }
}
