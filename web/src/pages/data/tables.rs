//! The lookup tables of the Data screen: the project's tables with their row counts, and one open
//! in the side panel with its rows a page at a time in the order of their keys ("Show more rows").

use super::reader::{Kind, Reader, Shown};
use super::{field, go, grid, link, pager, pending, text, time_text, value_text, Col, Row, Tab};
use crate::components::side_panel::SidePanel;
use crate::router::DataView;
use crate::state::Load;
use datadict_core::count;
use serde_json::Value;
use yew::prelude::*;

/// The strings of an array in an answer (its text for anything else), empty when it is absent.
fn texts(value: &Value) -> Vec<String> {
    value
        .as_array()
        .map_or_else(Vec::new, |items| items.iter().map(value_text).collect())
}

/// The lookup tables' tab: the list, and the table open in the side panel (its id).
pub(crate) fn table_tab(tab: &Tab, open: Option<String>) -> Html {
    let onreload = {
        let reload = tab.reload.clone();
        Callback::from(move |_| reload.set(*reload + 1))
    };
    let panel = open.clone().map(|id| {
        let state = tab.state.clone();
        let onclose = Callback::from(move |_| go(&state, DataView::Tables(None)));
        html! {
            <SidePanel content_key={id.clone()} label="Lookup table" {onclose}>
                <Reader key={id.as_str()} kind={Kind::Rows} arg={id.clone()} />
            </SidePanel>
        }
    });
    let open = open.map(|id| (id, String::new()));
    html! {
        <>
            <div class="actions"><button id="tables-reload" onclick={onreload}>{ "Reload" }</button></div>
            <Reader kind={Kind::Tables} {open} reload={*tab.reload} />
            { for panel }
        </>
    }
}

/// The project's lookup tables with their row counts.
pub(crate) fn tables_view(shown: &Shown) -> Html {
    let tables = match pending(shown.load) {
        Err(pending) => return pending,
        Ok(answer) => answer["results"].as_array().map_or(&[][..], Vec::as_slice),
    };
    if tables.is_empty() {
        return html! {
            <p class="hint" id="tables-empty">{ "No lookup tables yet. A table is made with POST /api/app/projects/{id}/lookup-tables and filled by sending a CSV file to PUT /lookup-tables/{table id}." }</p>
        };
    }
    let cols = [
        Col::plain("Name"),
        Col {
            head: "Rows".into(),
            th: Some("count"),
            td: Some("count"),
        },
        Col::plain("Columns"),
        Col::plain("Updated"),
    ];
    let rows = tables
        .iter()
        .map(|t| {
            let (id, name) = (field(t, "id"), field(t, "name"));
            let is_open = shown
                .props
                .open
                .as_ref()
                .is_some_and(|(open, _)| *open == id);
            let label = format!("Rows of {name}");
            let onclick = {
                let (state, id) = (shown.state.clone(), id.clone());
                Callback::from(move |_| go(&state, DataView::Tables(Some(id.clone()))))
            };
            let cells = vec![
                link("link open-table", label, name, onclick),
                text(field(t, "row_count")),
                text(texts(&t["columns"]).join(", ")),
                text(time_text(t["updated_at"].as_i64().unwrap_or_default())),
            ];
            Row {
                class: Some(if is_open {
                    "table-row open"
                } else {
                    "table-row"
                }),
                id: Some(id),
                cells,
            }
        })
        .collect();
    grid("table-list", "schemas cards", &cols, rows)
}

/// One lookup table in the side panel: the first page's answer with the rows of the pages after it
/// appended to its `results.rows`, and the last page's table and `next_cursor`; one card per row
/// on a phone.
pub(crate) fn rows_view(shown: &Shown) -> Html {
    let onclose = {
        let state = shown.state.clone();
        Callback::from(move |_: MouseEvent| go(&state, DataView::Tables(None)))
    };
    let rows = shown.rows;
    let content = match pending(shown.load) {
        Err(pending) => pending,
        Ok(answer) => {
            let table = &answer["results"];
            // A column without a header (never stored so, but a table read half-way through a
            // change could be) is named by its position rather than left blank.
            let mut cols: Vec<Col> = texts(&table["columns"])
                .into_iter()
                .map(Col::plain)
                .collect();
            let width = rows
                .iter()
                .filter_map(|row| row.as_array().map(Vec::len))
                .max()
                .unwrap_or(0);
            for i in cols.len()..width {
                cols.push(Col::plain(format!("Column {}", i + 1)));
            }
            // A row shorter than the header is filled with empty cells.
            let table_rows = rows
                .iter()
                .map(|row| Row {
                    class: None,
                    id: None,
                    cells: (0..cols.len())
                        .map(|i| text(row[i].as_str().unwrap_or_default().to_owned()))
                        .collect(),
                })
                .collect();
            html! {
                <>
                    <p class="hint" id="rows-count">{ count(rows.len() as u64, "row", "rows") }{ " of " }{ field(table, "row_count") }{ " shown" }</p>
                    if rows.is_empty() {
                        <p class="hint">{ "This table has no rows yet; send it a CSV file with PUT /lookup-tables/{table id}." }</p>
                    } else {
                        <div class="table-wrap">
                            { grid("table-rows", "schemas cards", &cols, table_rows) }
                        </div>
                    }
                    { pager("rows-more", "Show more rows", !answer["next_cursor"].is_null(), shown.more, shown.show_more.clone()) }
                </>
            }
        }
    };
    // The heading is there from the start, so that the panel focuses it on opening.
    let heading = match shown.load {
        Load::Loaded(answer) => field(&answer["results"], "name"),
        _ => "Lookup table".to_owned(),
    };
    html! {
        <section class="detail" id="table-detail">
            <h2>{ heading }</h2>
            <div class="actions"><button id="close-panel" onclick={onclose}>{ "Close" }</button></div>
            { content }
        </section>
    }
}
