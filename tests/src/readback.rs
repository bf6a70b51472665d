//! The answers of a datadict server's read API that the end-to-end tests read back into types: a
//! user profile and a group profile. The server writes them with its own types; reading them here
//! through types of the tests' own checks their field names apart from the server's code. The web
//! app shows these answers as JSON and needs no such types.

use serde::Deserialize;
use serde_json::{Map, Value};

/// `{"$distinct_id": "...", "$properties": {...}}`: one user profile.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct UserProfile {
    #[serde(rename = "$distinct_id")]
    pub distinct_id: String,
    #[serde(rename = "$properties")]
    pub properties: Map<String, Value>,
}

/// `{"$group_key": "...", "$group_id": "...", "$properties": {...}}`: one group profile.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct GroupProfile {
    #[serde(rename = "$group_key")]
    pub group_key: String,
    #[serde(rename = "$group_id")]
    pub group_id: String,
    #[serde(rename = "$properties")]
    pub properties: Map<String, Value>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_servers_answers_read_into_these_types() {
        let group: GroupProfile = serde_json::from_value(
            json!({"$group_key": "Company", "$group_id": "acme", "$properties": {"plan": "pro"}}),
        )
        .unwrap();
        assert_eq!(
            (group.group_key.as_str(), group.group_id.as_str()),
            ("Company", "acme")
        );
        assert_eq!(group.properties["plan"], "pro");
        let profile: UserProfile =
            serde_json::from_value(json!({"$distinct_id": "u1", "$properties": {}})).unwrap();
        assert_eq!(profile.distinct_id, "u1");
        assert!(profile.properties.is_empty());
    }
}
