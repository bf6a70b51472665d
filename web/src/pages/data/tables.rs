//! The lookup tables of the Data screen: the project's tables with their row counts, and one open
//! in the side panel with its rows a page at a time in the order of their keys ("Show more rows").

use super::{field, go, pager, pending, read, time_text, More, Next};
use crate::api;
use crate::components::side_panel::SidePanel;
use crate::router::DataView;
use crate::state::{use_app_state, Load};
use datadict_core::count;
use serde_json::Value;
use yew::prelude::*;

#[derive(Properties, PartialEq)]
pub struct TableListProps {
    /// The id of the table open in the panel.
    pub open: Option<String>,
}

/// The strings of an array in an answer (its text for anything else), empty when it is absent.
fn texts(value: &Value) -> Vec<String> {
    value.as_array().map_or_else(Vec::new, |items| items.iter().map(super::value_text).collect())
}

#[component]
pub fn TableList(props: &TableListProps) -> Html {
    let state = use_app_state();
    let reload = use_state(|| 0u32);
    let list = use_state(|| Load::<Value>::Idle);
    {
        let (state, list) = (state.clone(), list.clone());
        use_effect_with((state.connection.clone(), *reload), move |(conn, _)| {
            let Some(conn) = conn.clone() else { return };
            let url = api::lookup_tables_url(&conn);
            read(&state, conn, url, list, None);
        });
    }
    let onreload = {
        let reload = reload.clone();
        Callback::from(move |_| reload.set(*reload + 1))
    };
    let body = match pending(&list).map(|answer| answer["results"].as_array().map_or(&[][..], Vec::as_slice)) {
        Err(shown) => shown,
        Ok([]) => html! {
            <p class="hint" id="tables-empty">{ "No lookup tables yet. A table is made with POST /api/app/projects/{id}/lookup-tables and filled by sending a CSV file to PUT /lookup-tables/{table id}." }</p>
        },
        Ok(tables) => html! {
            <table id="table-list" class="schemas cards">
                <thead><tr>
                    <th scope="col">{ "Name" }</th><th scope="col" class="count">{ "Rows" }</th>
                    <th scope="col">{ "Columns" }</th><th scope="col">{ "Updated" }</th>
                </tr></thead>
                <tbody>{ for tables.iter().map(|t| {
                    let (id, name) = (field(t, "id"), field(t, "name"));
                    let is_open = props.open.as_deref() == Some(id.as_str());
                    let label = format!("Rows of {name}");
                    let onclick = {
                        let (state, id) = (state.clone(), id.clone());
                        Callback::from(move |_| go(&state, DataView::Tables(Some(id.clone()))))
                    };
                    html! {
                        <tr class={classes!("table-row", is_open.then_some("open"))} data-id={id}>
                            <td data-label="Name"><button class="link open-table" {onclick} aria-label={label}>{ name }</button></td>
                            <td data-label="Rows" class="count">{ field(t, "row_count") }</td>
                            <td data-label="Columns">{ texts(&t["columns"]).join(", ") }</td>
                            <td data-label="Updated">{ time_text(t["updated_at"].as_i64().unwrap_or_default()) }</td>
                        </tr>
                    }
                }) }</tbody>
            </table>
        },
    };
    let panel = props.open.clone().map(|id| {
        let state = state.clone();
        let onclose = Callback::from(move |_| go(&state, DataView::Tables(None)));
        html! {
            <SidePanel content_key={id.clone()} label="Lookup table" onclose={onclose.clone()}>
                <TableRows key={id.clone()} table_id={id.clone()} {onclose} />
            </SidePanel>
        }
    });
    html! {
        <>
            <div class="actions"><button id="tables-reload" onclick={onreload}>{ "Reload" }</button></div>
            { body }
            { for panel }
        </>
    }
}

#[derive(Properties, PartialEq)]
struct TableRowsProps {
    table_id: String,
    onclose: Callback<()>,
}

/// A table of text, one card per row on a phone: each cell is labelled by its column's header,
/// and a row shorter than the header is filled with empty cells.
fn text_table(id: &'static str, headers: &[String], rows: &[Value]) -> Html {
    html! {
        <div class="table-wrap">
        <table {id} class="schemas cards">
            <thead><tr>{ for headers.iter().map(|h| html! { <th scope="col">{ h.clone() }</th> }) }</tr></thead>
            <tbody>{ for rows.iter().map(|row| html! {
                <tr>{ for headers.iter().enumerate().map(|(i, h)| html! {
                    <td data-label={h.clone()}>{ row[i].as_str().unwrap_or_default().to_owned() }</td>
                }) }</tr>
            }) }</tbody>
        </table>
        </div>
    }
}

/// One lookup table in the side panel: its rows, one card per row on a phone. `read` holds the
/// first page's answer with the rows of the pages after it appended to its `results.rows`, and
/// the last page's table and `next_cursor`.
#[component]
fn TableRows(props: &TableRowsProps) -> Html {
    let state = use_app_state();
    let read_so_far = use_state(|| Load::<Value>::Idle);
    let more = use_state(|| More::Idle);
    {
        let (state, target, id) = (state.clone(), read_so_far.clone(), props.table_id.clone());
        use_effect_with(state.connection.clone(), move |conn| {
            let Some(conn) = conn.clone() else { return };
            let url = api::lookup_table_url(&conn, &id, None);
            read(&state, conn, url, target, None);
        });
    }
    let show_more = {
        let (state, target, more, id) = (state.clone(), read_so_far.clone(), more.clone(), props.table_id.clone());
        Callback::from(move |_| {
            let (Some(conn), Load::Loaded(so_far)) = (state.connection.clone(), (*target).clone()) else {
                return;
            };
            let Some(cursor) = so_far["next_cursor"].as_str() else {
                return;
            };
            let url = api::lookup_table_url(&conn, &id, Some(cursor));
            let next = Next { more: more.clone(), so_far, rows: "/results/rows" };
            read(&state, conn, url, target.clone(), Some(next));
        })
    };
    let empty: &[Value] = &[];
    let rows = match &*read_so_far {
        Load::Loaded(r) => r["results"]["rows"].as_array().map_or(empty, Vec::as_slice),
        _ => empty,
    };
    use_effect_with(rows.len(), |_| super::focus_if_lost("rows-count"));
    let onclose = props.onclose.reform(|_: MouseEvent| ());
    let content = match pending(&read_so_far) {
        Err(shown) => shown,
        Ok(r) => {
            let table = &r["results"];
            // A column without a header (never stored so, but a table read half-way through a
            // change could be) is named by its position rather than left blank.
            let mut headers = texts(&table["columns"]);
            let width = rows.iter().filter_map(|row| row.as_array().map(Vec::len)).max().unwrap_or(0);
            for i in headers.len()..width {
                headers.push(format!("Column {}", i + 1));
            }
            html! {
                <>
                    <p class="hint" id="rows-count">{ count(rows.len() as u64, "row", "rows") }{ " of " }{ field(table, "row_count") }{ " shown" }</p>
                    if rows.is_empty() {
                        <p class="hint">{ "This table has no rows yet; send it a CSV file with PUT /lookup-tables/{table id}." }</p>
                    } else {
                        { text_table("table-rows", &headers, rows) }
                    }
                    { pager("rows-more", "Show more rows", !r["next_cursor"].is_null(), &more, show_more) }
                </>
            }
        }
    };
    // The heading is there from the start, so that the panel focuses it on opening.
    let heading = match &*read_so_far {
        Load::Loaded(r) => field(&r["results"], "name"),
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
