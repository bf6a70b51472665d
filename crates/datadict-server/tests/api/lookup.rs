//! Lookup tables over HTTP: created and read through the application API, listed and replaced
//! with CSV as the ingestion reference does, with every answer of the reference (400 naming each
//! bad record and its line, 401, 403, 404, 413, 415, 429) and nothing stored from a refused CSV.

use crate::common::{gzip, on_both_stores, urlencode, Account, Backend, Reply, Server};
use datadict_server::ratelimit::{ManualClock, RateLimiter};
use datadict_server::store::Role;
use datadict_server::Config;
use serde_json::{json, Value};

/// A server with a project, its owner and a consumer, and one empty table `Accounts`.
struct Fixture {
    server: Server,
    p: i64,
    owner: Account,
    consumer: Account,
    id: String,
}

fn fixture(backend: Backend) -> Fixture {
    fixture_with(backend, Config::default())
}

fn fixture_with(backend: Backend, config: Config) -> Fixture {
    let server = Server::start_with_on(backend, config);
    let p = server.project("p").id;
    let owner = server.account("owner", p, Some(Role::Owner));
    let consumer = server.account("consumer", p, Some(Role::Consumer));
    let mut f = Fixture { server, p, owner, consumer, id: String::new() };
    f.id = f.create("Accounts");
    f
}

impl Fixture {
    fn tables(&self) -> String {
        format!("/api/app/projects/{}/lookup-tables", self.p)
    }

    /// Creates a table through the application API; returns its id.
    fn create(&self, name: &str) -> String {
        let r = self.server.post_json(&self.tables(), &self.owner, &json!({"name": name}));
        assert_eq!(r.status, 201, "{}", r.text);
        r.json()["results"]["id"].as_str().unwrap().to_owned()
    }

    /// `PUT /lookup-tables/{id}?project_id=p` as `who`, with `headers` (no `Content-Type` unless
    /// given).
    fn put_as(&self, who: Option<(&str, &str)>, id: &str, body: &[u8], headers: &[(&str, &str)]) -> Reply {
        self.server.send("PUT", &format!("/lookup-tables/{id}?project_id={}", self.p), who, headers, Some(body.to_vec()))
    }

    /// Replaces the fixture's table with `csv`, as the owner.
    fn put(&self, csv: &str) -> Reply {
        self.put_as(Some((&self.owner.username, &self.owner.secret)), &self.id, csv.as_bytes(), &[("Content-Type", "text/csv")])
    }

    /// `GET /lookup-tables?project_id=p` as `account`.
    fn list(&self, account: &Account) -> Reply {
        self.server.get(&format!("/lookup-tables?project_id={}", self.p), account)
    }

    /// One page of the fixture's table through the application API.
    fn page(&self, query: &str) -> Value {
        let r = self.server.get(&format!("{}/{}?{query}", self.tables(), self.id), &self.owner);
        assert_eq!(r.status, 200, "{}", r.text);
        r.json()
    }

    /// Every row of the fixture's table, read page by page with `limit`.
    fn rows(&self, limit: usize) -> Vec<Vec<String>> {
        let mut rows = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let query = match &cursor {
                Some(c) => format!("limit={limit}&cursor={}", urlencode(c)),
                None => format!("limit={limit}"),
            };
            let page = self.page(&query);
            let got: Vec<Vec<String>> = serde_json::from_value(page["results"]["rows"].clone()).unwrap();
            assert!(got.len() <= limit);
            rows.extend(got);
            match page["next_cursor"].as_str() {
                Some(next) => cursor = Some(next.to_owned()),
                None => return rows,
            }
        }
    }
}

fn owned(rows: &[&[&str]]) -> Vec<Vec<String>> {
    rows.iter().map(|r| r.iter().map(|f| (*f).to_owned()).collect()).collect()
}

fn a_table_is_created_replaced_listed_and_read_in_full(backend: Backend) {
    let f = fixture(backend);
    // The reference's list body, with the new table.
    let r = f.list(&f.owner);
    assert_eq!((r.status, r.json()), (200, json!({"code": 200, "status": "OK", "results": [{"id": f.id, "name": "Accounts"}]})));
    let empty = f.page("");
    assert_eq!(empty["results"]["columns"], json!([]));
    assert_eq!((empty["results"]["row_count"].clone(), empty["results"]["rows"].clone(), empty["next_cursor"].clone()), (json!(0), json!([]), Value::Null));

    // 25 rows, sent out of key order; read back in key order, 7 at a time.
    let mut csv = String::from("id,plan,seats\n");
    for i in (0..25).rev() {
        csv.push_str(&format!("acct-{i:02},plan {i},{}\n", i * 10));
    }
    let r = f.put(&csv);
    assert_eq!((r.status, r.json()), (200, json!({"code": 200, "status": "OK"})), "{}", r.text);
    let rows = f.rows(7);
    let want: Vec<Vec<String>> = (0..25).map(|i| vec![format!("acct-{i:02}"), format!("plan {i}"), (i * 10).to_string()]).collect();
    assert_eq!(rows, want);
    let first = f.page("limit=7");
    assert_eq!(first["results"]["columns"], json!(["id", "plan", "seats"]));
    assert_eq!(first["results"]["row_count"], 25);
    assert_eq!((first["results"]["id"].clone(), first["results"]["name"].clone()), (json!(f.id), json!("Accounts")));
    let cursor = first["next_cursor"].as_str().unwrap().to_owned();
    assert_eq!(f.page(&format!("limit=7&cursor={cursor}"))["results"]["rows"][0][0], "acct-07");
    // A page that ends exactly at the last row says so.
    assert_eq!(f.page("limit=25")["next_cursor"], Value::Null);
    for bad in ["acct-06", "", "WzEsMl0"] {
        let r = f.server.get(&format!("{}/{}?cursor={bad}", f.tables(), f.id), &f.owner);
        assert!(r.status == 400 && r.text.contains("is not a cursor of this table"), "{bad}: {}", r.text);
    }

    // Replaced again, with another header: the old rows are gone, and a cursor of the old table
    // is refused rather than continued in the new one's rows.
    std::thread::sleep(std::time::Duration::from_millis(2));
    let r = f.put("key,region\nz,eu\nb,us\n");
    assert_eq!(r.status, 200, "{}", r.text);
    let r = f.server.get(&format!("{}/{}?limit=7&cursor={cursor}", f.tables(), f.id), &f.owner);
    assert!(r.status == 409 && r.text.contains("was replaced after the first page was read"), "{}", r.text);
    assert_eq!(f.rows(100), owned(&[&["b", "us"], &["z", "eu"]]));
    let page = f.page("");
    assert_eq!((page["results"]["columns"].clone(), page["results"]["row_count"].clone()), (json!(["key", "region"]), json!(2)));
    // The application list shows the counts.
    let r = f.server.get(&f.tables(), &f.consumer);
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json()["results"][0]["row_count"], 2);
    // A header alone empties the table.
    assert_eq!(f.put("key,region\n").status, 200);
    assert_eq!(f.rows(10), Vec::<Vec<String>>::new());
}

/// Keys page in byte order on both stores: upper case before lower case, a key before the same
/// key with a zero byte appended, every ASCII key before `é`; a zero byte is kept as sent.
fn keys_page_in_byte_order_and_keep_a_zero_byte(backend: Backend) {
    let f = fixture(backend);
    let r = f.put("id,v\nb,1\na\u{0},2\na,3\n\u{e9},4\nB,5\n");
    assert_eq!(r.status, 200, "{}", r.text);
    let want = owned(&[&["B", "5"], &["a", "3"], &["a\u{0}", "2"], &["b", "1"], &["\u{e9}", "4"]]);
    assert_eq!(f.rows(2), want);
    assert!(f.page("limit=2")["next_cursor"].is_string());
}

fn quotes_line_breaks_a_bom_crlf_and_gzip_are_read(backend: Backend) {
    let f = fixture(backend);
    let csv = "\u{feff}id,note,empty\r\n\"k,1\",\"two\r\nlines, \"\"quoted\"\"\",\r\n\r\nk2,plain,\r\n\"ünï\",✓,\"\"";
    let r = f.put(csv);
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(f.page("")["results"]["columns"], json!(["id", "note", "empty"]), "the BOM is not part of the first name");
    assert_eq!(f.rows(1), owned(&[&["k,1", "two\r\nlines, \"quoted\"", ""], &["k2", "plain", ""], &["ünï", "✓", ""]]));

    let owner = Some((f.owner.username.as_str(), f.owner.secret.as_str()));
    let body = gzip(b"id,v\nfrom-gzip,1\n");
    let r = f.put_as(owner, &f.id, &body, &[("Content-Type", "text/csv; charset=utf-8"), ("Content-Encoding", "gzip")]);
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(f.rows(10), owned(&[&["from-gzip", "1"]]));
}

/// Each kind of bad record gets its index (the header is 0) and a message naming its line, and a
/// refused CSV leaves the stored table as it was.
fn a_bad_csv_is_refused_record_by_record_and_stores_nothing(backend: Backend) {
    let f = fixture(backend);
    assert_eq!(f.put("id,v\nkept,1\n").status, 200);
    let cases: &[(&str, &[(u64, &str)])] = &[
        // The reference's example: a blank key, a row of the wrong width.
        ("id,a,b\nk1,1,2\n,3,4\nk3,5\n", &[(2, "line 3: primary key is required and cannot be blank"), (3, "line 4: invalid row: wrong number of fields (2 where the header has 3)")]),
        ("id,a\nk1,1\nk1,2\n", &[(2, "line 3: the primary key `k1` is already the key of the row on line 2")]),
        ("id,a\nk1,\"never closed\nk2,2\n", &[(1, "the quoted field that opens on line 2 is not closed")]),
        // Text after a closing quote (RFC 4180 does not allow it) is refused, not joined.
        ("id,a\n2,\"x\"y\n", &[(1, "on line 2 a quoted field is followed by text before the next comma")]),
        ("id,,a\nk,1,2\n", &[(0, "line 1: column 2 of the header has no name")]),
        ("id,a,a\nk,1,2\n", &[(0, "the header names columns 2 and 3 both `a`")]),
        // A record spanning lines counts once: the third record starts on line 4.
        ("id,a\nk1,\"x\ny\"\nk2,1,extra\n", &[(2, "line 4: invalid row: wrong number of fields (3 where the header has 2)")]),
        ("", &[(0, "the CSV is empty")]),
    ];
    for (csv, want) in cases {
        let r = f.put(csv);
        assert_eq!(r.status, 400, "{csv:?}: {}", r.text);
        let body = r.json();
        assert_eq!((body["code"].clone(), body["status"].clone()), (json!(400), json!("Bad Request")), "{csv:?}: {}", r.text);
        let error = body["error"].as_str().unwrap();
        assert!(error.starts_with("some data points in the request failed validation") && error.contains("nothing was stored"), "{error}");
        let failed = body["failed_records"].as_array().unwrap();
        assert_eq!(failed.len(), want.len(), "{csv:?}: {}", r.text);
        for (got, (index, says)) in failed.iter().zip(*want) {
            assert_eq!(got["index"], *index, "{csv:?}: {}", r.text);
            assert!(got["message"].as_str().unwrap().contains(says), "{csv:?}: `{says}` not in {}", r.text);
            assert_eq!(got.as_object().unwrap().len(), 2, "only index and message: {got}");
        }
        assert_eq!(f.rows(10), owned(&[&["kept", "1"]]), "{csv:?} changed the table");
    }
    // Bytes that are not UTF-8.
    let owner = Some((f.owner.username.as_str(), f.owner.secret.as_str()));
    let r = f.put_as(owner, &f.id, b"id,v\nk,\xff\n", &[("Content-Type", "text/csv")]);
    assert_eq!((r.status, r.json()["failed_records"][0]["index"].clone()), (400, json!(1)), "{}", r.text);
    assert!(r.text.contains("line 2 is not UTF-8 text"), "{}", r.text);
    assert_eq!(f.page("")["results"]["row_count"], 1);
}

fn credentials_and_roles(backend: Backend) {
    let f = fixture(backend);
    let stranger_project = f.server.project("other").id;
    let stranger = f.server.account("stranger", stranger_project, Some(Role::Owner));
    let csv = b"id,v\nk,1\n";
    let text = [("Content-Type", "text/csv")];
    let invalid = json!({"code": 401, "error": "Invalid credentials", "status": "Unauthorized"});
    let owner_auth = Some((f.owner.username.as_str(), f.owner.secret.as_str()));
    for who in [Some((f.owner.username.as_str(), "wrong")), Some(("ghost", f.owner.secret.as_str()))] {
        let r = f.put_as(who, &f.id, csv, &text);
        assert_eq!((r.status, r.json()), (401, invalid.clone()));
        let r = f.server.send("GET", &format!("/lookup-tables?project_id={}", f.p), who, &[], None);
        assert_eq!((r.status, r.json()), (401, invalid.clone()));
    }
    // No header: the 401 says what to send, in the same body.
    let r = f.put_as(None, &f.id, csv, &text);
    assert_eq!((r.status, r.json()["code"].clone(), r.json()["status"].clone()), (401, json!(401), json!("Unauthorized")));
    assert!(r.json()["error"].as_str().unwrap().contains("Authorization: Basic"), "{}", r.text);
    // The project token is not a service account here.
    let token = f.server.project("with-token").token;
    let r = f.put_as(Some((&token, "")), &f.id, csv, &text);
    assert_eq!((r.status, r.json()), (401, invalid.clone()));
    // Credentials come first: a bad project id, a bad table id or a bad body is only told to them.
    let r = f.server.send("PUT", "/lookup-tables/nope?project_id=zz", None, &[], Some(b"x".to_vec()));
    assert_eq!(r.status, 401, "{}", r.text);

    // A consumer reads but does not replace; an account without a role does neither.
    let consumer = Some((f.consumer.username.as_str(), f.consumer.secret.as_str()));
    let r = f.put_as(consumer, &f.id, csv, &text);
    assert_eq!((r.status, r.json()["status"].clone(), r.json()["code"].clone()), (403, json!("Forbidden"), json!(403)), "{}", r.text);
    assert!(r.json()["error"].as_str().unwrap().contains("owner or admin role"), "{}", r.text);
    assert_eq!(f.list(&f.consumer).status, 200);
    let r = f.list(&stranger);
    assert_eq!(r.status, 403, "{}", r.text);
    assert!(r.json()["error"].as_str().unwrap().contains(&format!("no access to project {}", f.p)), "{}", r.text);
    let stranger_auth = Some((stranger.username.as_str(), stranger.secret.as_str()));
    assert_eq!(f.put_as(stranger_auth, &f.id, csv, &text).status, 403);
    assert_eq!(f.page("")["results"]["row_count"], 0, "a refused request stored rows");

    // `project_id` is required, and must be a project id.
    let r = f.server.get("/lookup-tables", &f.owner);
    assert_eq!((r.status, r.json()["status"].clone()), (400, json!("Bad Request")), "{}", r.text);
    assert!(r.text.contains("`project_id` is required"), "{}", r.text);
    let r = f.server.get("/lookup-tables?project_id=x1", &f.owner);
    assert!(r.status == 400 && r.text.contains("project id"), "{}", r.text);
    // A repeated `project_id` is refused, as on the ingestion routes; it was resolved to the last
    // value (here a 403 for the project the owner has no role in).
    let twice = format!("project_id={}&project_id={stranger_project}", f.p);
    let r = f.server.get(&format!("/lookup-tables?{twice}"), &f.owner);
    assert_eq!(r.status, 400, "{}", r.text);
    assert!(r.json()["error"].as_str().unwrap().contains("`project_id` appears more than once in the query string"), "{}", r.text);
    let r = f.server.send("PUT", &format!("/lookup-tables/{}?{twice}", f.id), owner_auth, &text, Some(csv.to_vec()));
    assert_eq!(r.status, 400, "{}", r.text);
    let r = f.server.send("GET", &format!("/lookup-tables?{twice}"), Some((&f.owner.username, "wrong")), &[], None);
    assert_eq!(r.status, 401, "{}", r.text);
    assert_eq!(f.page("")["results"]["row_count"], 0, "a refused request stored rows");
}

fn unknown_tables_answer_404(backend: Backend) {
    let f = fixture(backend);
    let other_project = f.server.project("other").id;
    let other_owner = f.server.account("other-owner", other_project, Some(Role::Owner));
    let owner = Some((f.owner.username.as_str(), f.owner.secret.as_str()));
    let text = [("Content-Type", "text/csv")];
    let unknown = "f077cb07-008a-4955-8a4a-b4c163db3a87";
    for id in [unknown, "not-a-uuid", "%20"] {
        let r = f.put_as(owner, id, b"id\nk\n", &text);
        assert_eq!((r.status, r.json()["code"].clone(), r.json()["status"].clone()), (404, json!(404), json!("Not Found")), "{id}: {}", r.text);
        assert!(r.json()["error"].as_str().unwrap().contains("was not found in project"), "{}", r.text);
    }
    // Another project's table is unknown to this project's requests, even with its owner's
    // credentials naming the other project.
    let r = f.server.send("PUT", &format!("/lookup-tables/{}?project_id={other_project}", f.id), Some((&other_owner.username, &other_owner.secret)), &text, Some(b"id\nk\n".to_vec()));
    assert_eq!(r.status, 404, "{}", r.text);
    // Upper case names the same table.
    let r = f.put_as(owner, &f.id.to_uppercase(), b"id\nk\n", &text);
    assert_eq!(r.status, 200, "{}", r.text);
}

fn the_size_limit_answers_413_after_reading_the_body(backend: Backend) {
    let f = fixture_with(backend, Config { lookup_table_max_bytes: 1000, ..Default::default() });
    let owner = Some((f.owner.username.as_str(), f.owner.secret.as_str()));
    let text = [("Content-Type", "text/csv")];
    let sized = |len: usize| {
        let mut csv = b"id,v\nk,".to_vec();
        csv.resize(len - 1, b'x');
        csv.push(b'\n');
        csv
    };
    let r = f.put_as(owner, &f.id, &sized(1000), &text);
    assert_eq!(r.status, 200, "exactly the limit is accepted: {}", r.text);
    let r = f.put_as(owner, &f.id, &sized(1001), &text);
    assert_eq!((r.status, r.json()["code"].clone(), r.json()["status"].clone()), (413, json!(413), json!("Request Entity Too Large")), "{}", r.text);
    let error = r.json()["error"].as_str().unwrap().to_owned();
    assert!(error.contains("max limit of 1000 bytes") && error.contains("--lookup-table-max-bytes"), "{error}");
    // A large body is read to its end, so the client gets the answer rather than a reset.
    let r = f.put_as(owner, &f.id, &sized(8 << 20), &text);
    assert_eq!(r.status, 413, "{}", r.text);
    // The limit is on the uncompressed CSV.
    let small = gzip(&sized(5000));
    assert!(small.len() < 1000);
    let r = f.put_as(owner, &f.id, &small, &[("Content-Type", "text/csv"), ("Content-Encoding", "gzip")]);
    assert_eq!(r.status, 413, "{}", r.text);
    assert_eq!(f.page("")["results"]["row_count"], 1, "the accepted table is still stored");
    // The connection still works.
    assert_eq!(f.list(&f.owner).status, 200);
}

fn other_content_types_answer_415(backend: Backend) {
    let f = fixture(backend);
    let owner = Some((f.owner.username.as_str(), f.owner.secret.as_str()));
    let cases: &[(&[(&str, &str)], &str)] = &[
        (&[], "no `Content-Type`"),
        (&[("Content-Type", "application/json")], "`Content-Type: application/json` is not accepted here"),
        (&[("Content-Type", "application/x-www-form-urlencoded")], "send the table as CSV with `Content-Type: text/csv`"),
        (&[("Content-Type", "text/csv; charset=iso-8859-1")], "save the CSV as UTF-8"),
        (&[("Content-Type", "text/csv"), ("Content-Encoding", "br")], "`Content-Encoding: br` is not supported"),
    ];
    for (headers, says) in cases {
        let r = f.put_as(owner, &f.id, b"id\nk\n", headers);
        assert_eq!((r.status, r.json()["code"].clone(), r.json()["status"].clone()), (415, json!(415), json!("Unsupported Media Type")), "{headers:?}: {}", r.text);
        assert!(r.json()["error"].as_str().unwrap().contains(says), "{headers:?}: {}", r.text);
    }
    assert_eq!(f.page("")["results"]["row_count"], 0);
}

fn the_ingestion_rate_limit_answers_429(backend: Backend) {
    let clock = ManualClock::default();
    let f = fixture_with(backend, Config { ingest_rate_limit: Some(100), rate_limiter: RateLimiter::with_clock(clock.clone()), ..Default::default() });
    // 60 bytes of the 100 a minute: the first passes, the second does not.
    let csv = format!("id,v\n{},1\n", "k".repeat(52));
    assert_eq!(csv.len(), 60);
    assert_eq!(f.put(&csv).status, 200);
    let r = f.put("id,v\nother,1\n");
    assert_eq!(r.status, 200, "a small body still fits: {}", r.text);
    let r = f.put(&csv);
    assert_eq!(r.status, 429, "{}", r.text);
    assert_eq!(r.json(), json!({"code": 429, "error": "Project exceeded rate limits. Please retry the request with exponential backoff.", "status": "Too Many Requests"}));
    assert!(r.header("retry-after").unwrap().parse::<u64>().unwrap() >= 1);
    assert_eq!(f.rows(10), owned(&[&["other", "1"]]), "the refused CSV was stored");
    clock.advance(std::time::Duration::from_secs(60));
    assert_eq!(f.put(&csv).status, 200);
}

fn the_application_routes_create_read_and_delete(backend: Backend) {
    let f = fixture(backend);
    let tables = f.tables();
    // Names: required, unique per project, trimmed.
    for (body, says) in [
        (json!({}), "`name` is required"),
        (json!({"name": "  "}), "blank"),
        (json!({"name": 3}), "must be a string"),
        (json!({"name": "x", "columns": []}), "`columns` is not a field"),
        (json!({"name": "a\nb"}), "control character"),
        (json!({"name": "x".repeat(256)}), "longer than 255"),
    ] {
        let r = f.server.post_json(&tables, &f.owner, &body);
        assert_eq!(r.status, 400, "{body}: {}", r.text);
        assert!(r.json()["error"].as_str().unwrap().contains(says), "{body}: {}", r.text);
        assert_eq!(r.json()["status"], "error");
    }
    let r = f.server.post_json(&tables, &f.owner, &json!({"name": " Accounts "}));
    assert_eq!(r.status, 409, "{}", r.text);
    assert!(r.json()["error"].as_str().unwrap().contains(&f.id), "{}", r.text);
    assert_eq!(f.server.post_json(&tables, &f.consumer, &json!({"name": "Mine"})).status, 403);
    let second = f.create(" Products ");
    let r = f.server.get(&tables, &f.owner);
    let listed = r.json();
    let names: Vec<&str> = listed["results"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["Accounts", "Products"]);

    // Paging parameters are checked.
    for (query, says) in [("limit=0", "limit"), ("limit=1001", "limit"), ("limit=1&limit=2", "duplicate field `limit`")] {
        let r = f.server.get(&format!("{tables}/{}?{query}", f.id), &f.owner);
        assert_eq!(r.status, 400, "{query}: {}", r.text);
        assert!(r.json()["error"].as_str().unwrap().contains(says), "{query}: {}", r.text);
    }
    assert_eq!(f.server.get(&format!("{tables}/f077cb07-008a-4955-8a4a-b4c163db3a87"), &f.owner).status, 404);
    assert_eq!(f.server.get(&format!("{tables}/x"), &f.owner).status, 404);

    // Deleting: the consumer may not; the owner does, once; the table is then unknown everywhere.
    assert_eq!(f.put("id\na\nb\n").status, 200);
    assert_eq!(f.server.delete(&format!("{tables}/{}", f.id), &f.consumer).status, 403);
    let r = f.server.delete(&format!("{tables}/{}", f.id), &f.owner);
    assert_eq!((r.status, r.json()), (200, json!({"status": "ok", "results": {"delete_count": 1}})));
    assert_eq!(f.server.delete(&format!("{tables}/{}", f.id), &f.owner).status, 404);
    assert_eq!(f.server.get(&format!("{tables}/{}", f.id), &f.owner).status, 404);
    assert_eq!(f.put("id\nc\n").status, 404);
    let r = f.list(&f.owner);
    assert_eq!(r.json()["results"], json!([{"id": second, "name": "Products"}]));
}

on_both_stores!(
    a_table_is_created_replaced_listed_and_read_in_full,
    keys_page_in_byte_order_and_keep_a_zero_byte,
    quotes_line_breaks_a_bom_crlf_and_gzip_are_read,
    a_bad_csv_is_refused_record_by_record_and_stores_nothing,
    credentials_and_roles,
    unknown_tables_answer_404,
    the_size_limit_answers_413_after_reading_the_body,
    other_content_types_answer_415,
    the_ingestion_rate_limit_answers_429,
    the_application_routes_create_read_and_delete,
);
