//! What the Data quality screen shows of its answers: the totals, a bar per day of the last 30
//! days, the tables by event (with good and rejected records) and by property, each finding with
//! its samples, and the rejected records with theirs. Answers stay JSON, as on the Data screen;
//! every value from the server is rendered as text, samples as pretty-printed JSON in `<pre>`.

use super::{go, Answers};
use crate::pages::data::{code, field, grid, link, text, time_text, Col, Row};
use crate::router::{Panel, QualityView, Route};
use crate::state::{Action, StateHandle};
use datadict_core::{count, order, EntityType, IssueCode};
use serde_json::{Map, Value};
use yew::prelude::*;

/// The entity name under which the server counts new keys past a day's cap.
const OTHERS: &str = "$others";

/// The rows of a list answer.
fn rows(answer: &Value) -> &[Value] {
    answer["results"].as_array().map_or(&[][..], Vec::as_slice)
}

/// A count of an answer (0 when absent).
fn n(value: &Value) -> i64 {
    value.as_i64().unwrap_or(0)
}

/// An issue code in words with the code beside it, as the import screen shows codes; the server's
/// own `token_refused` has words here since it is no core code.
pub(crate) fn code_words(code: &str) -> Html {
    let words = match IssueCode::parse(code) {
        Some(c) => c.describe(),
        None if code == "token_refused" => "the project token was refused",
        None => "",
    };
    html! { <>{ words }{ " " }<code class="code">{ code.to_owned() }</code></> }
}

/// A stored record or sample as the page shows it: JSON text pretty-printed, and text that is not
/// JSON (a sample cut at its size limit, an unreadable line) as it is.
fn pretty(value: &Value) -> String {
    let parsed = match value {
        Value::String(s) => match serde_json::from_slice::<Value>(s.as_bytes()) {
            Ok(v) => v,
            Err(_) => return s.clone(),
        },
        other => other.clone(),
    };
    serde_json::to_string_pretty(&parsed).unwrap_or_default()
}

/// An entity of a finding as a link to its detail in the dictionary: an event's schema, or for a
/// profile update (kind `user`, entity `$user`, or kind `group`, entity the group key) the
/// `profile` schema it is checked against, said so beside the name; the `$others` row past the
/// cap is no entity and stays text.
fn entity_link(state: &StateHandle, event: &str, kind: &str) -> Html {
    if event == OTHERS {
        return html! { <span class="hint">{ "others (past the day's cap of names)" }</span> };
    }
    if event.is_empty() {
        return html! { <span class="hint">{ "(no event name)" }</span> };
    }
    let (t, what) = match kind {
        "group" => (EntityType::Profile, "group profiles "),
        "user" => (EntityType::Profile, "user profile "),
        _ if event == "$user" => (EntityType::Profile, ""),
        _ => (EntityType::Event, ""),
    };
    let onclick = {
        let (state, name) = (state.clone(), event.to_owned());
        Callback::from(move |_| {
            state.dispatch(Action::Go(Route::Dictionary(
                t,
                Panel::Detail(name.clone()),
            )))
        })
    };
    html! {
        <>
            if !what.is_empty() { <span class="hint kind">{ what }</span> }
            { link("link open-schema", format!("Schema of {what}{event} in the dictionary"), event.to_owned(), onclick) }
        </>
    }
}

/// The whole screen below its buttons.
pub(crate) fn overview(a: &Answers, state: &StateHandle) -> Html {
    let s = &a.summary["results"];
    let (v, r) = (&s["violations"], &s["rejected"]);
    let total = n(&v["total"]);
    let by_code: Vec<Row> = v["by_code"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(c, k)| Row {
            class: None,
            id: Some(c.clone()),
            // `no_schema` counts profile updates without their `profile` schema too, not only events.
            cells: vec![
                if c == "no_schema" { html! { <>{ "a record the dictionary has no schema for (an event, or a profile update) " }<code class="code">{ "no_schema" }</code></> } } else { code_words(c) },
                text(n(k).to_string()),
            ],
        })
        .collect();
    html! {
        <>
            <div class="stats" id="quality-totals">
                <div><b id="total-violations">{ total }</b>{ if total == 1 { "violation" } else { "violations" } }</div>
                <div><b id="total-rejected">{ n(&r["total"]) }</b>{ if n(&r["total"]) == 1 { "rejected record" } else { "rejected records" } }</div>
            </div>
            if total == 0 && n(&r["total"]) == 0 {
                <p id="quality-empty">{ if s["events"]["good"].as_object().is_some_and(|m| !m.is_empty()) {
                    "Nothing to show: every record of the last 30 days matched the dictionary, and none was refused."
                } else {
                    "Nothing to show: no event arrived in the last 30 days, and no profile update broke the dictionary or was refused."
                } }</p>
            } else {
                <h3>{ "Per day" }</h3>
                { chart(&v["per_day"], &r["per_day"]) }
                if !by_code.is_empty() {
                    <h3>{ "Violations by issue" }</h3>
                    { grid("quality-codes", "schemas cards quality-table", &[Col::plain("Issue"), count_col("Violations")], by_code) }
                }
                <h3>{ "By event and profile" }</h3>
                <p class="hint">{ "Stored records passed the import rules (a stored record may still have violations); rejected records did not." }</p>
                { by_event(s, state) }
                { by_property(&v["by_property"]) }
                { findings(rows(&a.violations), state) }
                { rejected(rows(&a.rejected), state) }
            }
        </>
    }
}

/// A time to the minute, in UTC: `2026-11-25 19:38 UTC`.
fn minute(ms: i64) -> String {
    let iso = time_text(ms);
    format!("{} {} UTC", &iso[..10], &iso[11..16])
}

/// A column of counts, right-aligned on wide screens.
fn count_col(head: &str) -> Col {
    Col {
        head: head.into(),
        th: Some("n"),
        td: Some("n"),
    }
}

/// The samples column, given a third of a wide table's width by its cells' class.
fn samples_col() -> Col {
    Col {
        head: "Samples".into(),
        th: None,
        td: Some("samples"),
    }
}

/// One bar per UTC day of the last 30, today last: violations below, rejected records stacked on
/// top, each as a share of the highest day. The numbers are in each bar's text for screen readers
/// and in its tooltip.
fn chart(violations: &Value, rejected: &Value) -> Html {
    let of = |list: &Value, day: &str| {
        list.as_array()
            .into_iter()
            .flatten()
            .find(|d| d["day"] == day)
            .map_or(0, |d| n(&d["count"]))
    };
    const DAY_MS: f64 = 86_400_000.0;
    let today = (js_sys::Date::now() / DAY_MS).floor() * DAY_MS;
    let days: Vec<(String, i64, i64)> = (0..30)
        .rev()
        .map(|i| {
            let day = time_text((today - f64::from(i) * DAY_MS) as i64)[..10].to_owned();
            let (v, r) = (of(violations, &day), of(rejected, &day));
            (day, v, r)
        })
        .collect();
    let peak = days.iter().map(|(_, v, r)| v + r).max().unwrap_or(0).max(1);
    let bars = days.iter().map(|(day, v, r)| {
        let words = format!(
            "{day}: {}, {}",
            count(*v as u64, "violation", "violations"),
            count(*r as u64, "rejected record", "rejected records")
        );
        html! {
            <li title={words.clone()} data-day={day.clone()} data-violations={v.to_string()}>
                <span class="bar-r" style={format!("height:{}%", r * 100 / peak)}></span>
                <span class="bar-v" style={format!("height:{}%", v * 100 / peak)}></span>
                <span class="sr-only">{ words }</span>
            </li>
        }
    });
    let (first, last) = (
        days.first().map(|d| d.0.clone()).unwrap_or_default(),
        days.last().map(|d| d.0.clone()).unwrap_or_default(),
    );
    html! {
        <figure class="chart" id="quality-chart">
            <ol class="bars" aria-label="Violations and rejected records per day">{ for bars }</ol>
            <figcaption class="hint">
                <div class="axis"><span>{ first }</span><span>{ last }</span></div>
                <span class="key-v"></span>{ "violations" }<span class="key-r"></span>{ "rejected records · most in one day: " }{ peak }
            </figcaption>
        </figure>
    }
}

/// Per event name, and per `profile` schema that profile updates were checked against: violations,
/// stored (good) and rejected (bad) records, most troubled first. The summary counts events
/// (`by_event`, `events`) apart from profile updates (`by_profile`: `$user`, or a group key), so an
/// event and a group key of one name are two rows.
fn by_event(s: &Value, state: &StateHandle) -> Html {
    let [violations, good, bad, profiles] = [
        &s["violations"]["by_event"],
        &s["events"]["good"],
        &s["events"]["bad"],
        &s["violations"]["by_profile"],
    ];
    // (name, kind, violations, stored, rejected); kind `event`, or `user` / `group` for a profile.
    let mut rows: Vec<(&String, &str, i64, i64, i64)> = Vec::new();
    for map in [violations, good, bad] {
        for name in map.as_object().into_iter().flat_map(Map::keys) {
            if !rows.iter().any(|r| r.0 == name) {
                rows.push((name, "event", n(&violations[name]), n(&good[name]), n(&bad[name])));
            }
        }
    }
    for (name, count) in profiles.as_object().into_iter().flatten() {
        rows.push((name, if name == "$user" { "user" } else { "group" }, n(count), 0, 0));
    }
    if rows.is_empty() {
        return html! { <p class="hint">{ "No event in the last 30 days." }</p> };
    }
    // Through the core's one sort of indices: a sort per element type would cost wasm size.
    let rows = order::sorted_indices(rows.len(), &|a, b| {
        let (x, y) = (&rows[a], &rows[b]);
        (y.2 + y.4).cmp(&(x.2 + x.4)).then_with(|| x.0.cmp(y.0))
    })
    .into_iter()
    .map(|i| rows[i])
    .map(|(name, kind, v, g, b)| Row {
        class: Some("event-row"),
        id: Some(if kind == "event" { name.clone() } else { [kind, ":", name].concat() }),
        cells: vec![
            entity_link(state, name, kind),
            text(v.to_string()),
            text(g.to_string()),
            text(b.to_string()),
        ],
    })
    .collect();
    let cols = [
        Col::plain("Event or profile"),
        count_col("Violations"),
        count_col("Stored"),
        count_col("Rejected"),
    ];
    grid("quality-events", "schemas cards quality-table", &cols, rows)
}

/// Per property name, across events: how many violations name it.
fn by_property(map: &Value) -> Html {
    let Some(map) = map.as_object().filter(|m| !m.is_empty()) else {
        return html! {};
    };
    let names: Vec<&String> = map.keys().collect();
    let order = order::sorted_indices(names.len(), &|a, b| {
        n(&map[names[b]])
            .cmp(&n(&map[names[a]]))
            .then_with(|| names[a].cmp(names[b]))
    });
    let rows = order
        .into_iter()
        .map(|i| names[i])
        .map(|p| Row {
            class: None,
            id: Some(p.clone()),
            cells: vec![code(p.clone()), text(n(&map[p]).to_string())],
        })
        .collect();
    html! {
        <>
            <h3>{ "By property" }</h3>
            { grid("quality-properties", "schemas cards quality-table", &[Col::plain("Property"), count_col("Violations")], rows) }
        </>
    }
}

/// The samples of a row, folded: each pretty-printed in its own `<pre>`, as text.
fn samples(list: &[Value], render: fn(&Value) -> Html) -> Html {
    if list.is_empty() {
        return html! { <span class="hint">{ "none kept" }</span> };
    }
    html! {
        <details class="samples">
            <summary>{ count(list.len() as u64, "sample", "samples") }</summary>
            { for list.iter().map(render) }
        </details>
    }
}

fn violation_sample(sample: &Value) -> Html {
    html! { <pre class="json sample">{ pretty(sample) }</pre> }
}

fn rejected_sample(sample: &Value) -> Html {
    html! {
        <>
            <p class="sample-reason">{ field(sample, "message") }</p>
            <pre class="json sample">{ pretty(&sample["record"]) }</pre>
        </>
    }
}

/// Rows of a list merged over days: one per key (the fields named), counts added, the last seen
/// kept, types and samples gathered (up to 5 samples, the server's own cap per row).
fn merge(list: &[Value], key: &[&str]) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    for row in list {
        match out
            .iter_mut()
            .find(|o| key.iter().all(|k| o[*k] == row[*k]))
        {
            Some(o) => {
                o["count"] = (n(&o["count"]) + n(&row["count"])).into();
                o["last_seen"] = n(&o["last_seen"]).max(n(&row["last_seen"])).into();
                for (list, cap) in [("types", usize::MAX), ("samples", 5)] {
                    for item in row[list].as_array().into_iter().flatten() {
                        if let Some(items) = o[list]
                            .as_array_mut()
                            .filter(|i| i.len() < cap && !i.contains(item))
                        {
                            items.push(item.clone());
                        }
                    }
                }
            }
            None => out.push(row.clone()),
        }
    }
    order::sorted_indices(out.len(), &|a, b| {
        n(&out[b]["count"]).cmp(&n(&out[a]["count"]))
    })
    .into_iter()
    .map(|i| out[i].clone())
    .collect()
}

/// Each finding of the last 30 days: the entity, the property, the issue in words, how often,
/// the JSON types seen, when last, and samples; undocumented events and unknown properties offer
/// a draft of their own.
fn findings(list: &[Value], state: &StateHandle) -> Html {
    if list.is_empty() {
        return html! {};
    }
    let rows = merge(list, &["kind", "event", "property", "code"])
        .iter()
        .map(|f| {
            let (event, c) = (field(f, "event"), field(f, "code"));
            let property = field(f, "property");
            let draftable = (c == "no_schema" || c == "unknown_property") && field(f, "kind") == "event" && event != OTHERS;
            let ondraft = {
                let (state, event) = (state.clone(), event.clone());
                Callback::from(move |_| go(&state, QualityView::Draft(Some(event.clone()))))
            };
            let types: Vec<String> = f["types"].as_array().into_iter().flatten().map(crate::pages::data::value_text).collect();
            // A profile update's `no_schema` is no undocumented event: the server's message says
            // which `profile` schema is missing, where the code's words would say "an event".
            let message = field(f, "message");
            let issue = html! {
                <>
                    if field(f, "kind") == "event" { { code_words(&c) } } else { <code class="code">{ c.clone() }</code> }
                    if !message.is_empty() { <div class="hint">{ message }</div> }
                    if draftable {
                        <div><button class="link draft-event" onclick={ondraft} aria-label={format!("Draft a schema for {event}")}>{ "Draft a schema" }</button></div>
                    }
                </>
            };
            Row {
                class: Some("finding"),
                id: Some(format!("{event}\u{1f}{property}\u{1f}{c}")),
                cells: vec![
                    entity_link(state, &event, &field(f, "kind")),
                    if property.is_empty() { html! { <span class="hint">{ "the whole record" }</span> } } else { code(property) },
                    issue,
                    text(n(&f["count"]).to_string()),
                    text(if types.is_empty() { "—".to_owned() } else { types.join(", ") }),
                    text(minute(n(&f["last_seen"]))),
                    samples(f["samples"].as_array().map_or(&[][..], Vec::as_slice), violation_sample),
                ],
            }
        })
        .collect();
    let cols = [
        Col::plain("Entity"),
        Col::plain("Property"),
        Col::plain("Issue"),
        count_col("Count"),
        Col::plain("Types seen"),
        Col::plain("Last seen"),
        samples_col(),
    ];
    html! {
        <>
            <h3>{ "Every violation" }</h3>
            { grid("quality-findings", "schemas cards quality-table", &cols, rows) }
        </>
    }
}

/// The records the rules refused (the bad store): the route, the event, the reason, how often,
/// when last, and samples of the record with the reason given for it.
fn rejected(list: &[Value], state: &StateHandle) -> Html {
    if list.is_empty() {
        return html! {};
    }
    let rows = merge(list, &["route", "event", "code", "message"])
        .iter()
        .map(|f| Row {
            class: Some("rejected-row"),
            id: None,
            cells: vec![
                text(field(f, "route")),
                entity_link(state, &field(f, "event"), ""),
                html! { <>{ code_words(&field(f, "code")) }<div class="hint">{ field(f, "message") }</div></> },
                text(n(&f["count"]).to_string()),
                text(minute(n(&f["last_seen"]))),
                samples(f["samples"].as_array().map_or(&[][..], Vec::as_slice), rejected_sample),
            ],
        })
        .collect();
    let cols = [
        Col::plain("Route"),
        Col::plain("Event"),
        Col::plain("Reason"),
        count_col("Count"),
        Col::plain("Last seen"),
        samples_col(),
    ];
    html! {
        <>
            <h3>{ "Rejected records" }</h3>
            { grid("quality-rejected", "schemas cards quality-table", &cols, rows) }
        </>
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use wasm_bindgen_test::wasm_bindgen_test;

    #[wasm_bindgen_test]
    fn rows_of_several_days_merge_into_one_finding_per_key() {
        let day = |day: &str, count: i64, last: i64, types: Value, samples: Value| {
            json!({"day": day, "kind": "event", "event": "Purchase", "property": "price", "code": "type_mismatch",
                   "count": count, "last_seen": last, "types": types, "samples": samples})
        };
        let other = json!({"day": "2026-11-02", "kind": "event", "event": "Purchase", "property": "coupon", "code": "unknown_property",
                           "count": 9, "last_seen": 1, "types": ["string"], "samples": []});
        let merged = merge(
            &[
                day(
                    "2026-11-01",
                    2,
                    50,
                    json!(["string"]),
                    json!(["a", "b", "c"]),
                ),
                other.clone(),
                day(
                    "2026-11-02",
                    3,
                    40,
                    json!(["string", "boolean"]),
                    json!(["c", "d", "e", "f"]),
                ),
            ],
            &["kind", "event", "property", "code"],
        );
        // The most frequent first; counts added, the latest time kept, types and samples gathered
        // without repeats and up to the server's five samples.
        assert_eq!(merged.len(), 2);
        assert_eq!(merged[0], other);
        assert_eq!(
            (&merged[1]["count"], &merged[1]["last_seen"]),
            (&json!(5), &json!(50))
        );
        assert_eq!(merged[1]["types"], json!(["string", "boolean"]));
        assert_eq!(merged[1]["samples"], json!(["a", "b", "c", "d", "e"]));
    }

    #[wasm_bindgen_test]
    fn samples_are_pretty_printed_unless_they_are_not_json() {
        assert_eq!(
            pretty(&json!("{\"event\":\"A\",\"n\":1}")),
            "{\n  \"event\": \"A\",\n  \"n\": 1\n}"
        );
        // A sample cut at its size limit is no JSON any more: it is shown as it is.
        assert_eq!(
            pretty(&json!("{\"event\":\"A\",\"no")),
            "{\"event\":\"A\",\"no"
        );
        assert_eq!(pretty(&json!({"a": [1]})), "{\n  \"a\": [\n    1\n  ]\n}");
    }
}
