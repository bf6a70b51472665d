//! The lookup tables of the Data screen: the project's tables with their row counts, and one open
//! in the side panel with its rows a page at a time in the order of their keys ("Show more rows").

use super::{failed, go, loading, time_text, More};
use crate::api;
use crate::components::log::log_request;
use crate::components::side_panel::SidePanel;
use crate::router::DataView;
use crate::state::{use_app_state, Load};
use datadict_core::count;
use datadict_core::readback::LookupTable;
use yew::prelude::*;

#[derive(Properties, PartialEq)]
pub struct TableListProps {
    /// The id of the table open in the panel.
    pub open: Option<String>,
}

#[component]
pub fn TableList(props: &TableListProps) -> Html {
    let state = use_app_state();
    let reload = use_state(|| 0u32);
    let list = use_state(|| Load::<Vec<LookupTable>>::Idle);
    {
        let (state, list) = (state.clone(), list.clone());
        use_effect_with((state.connection.clone(), *reload), move |(conn, _)| {
            let Some(conn) = conn.clone() else { return };
            list.set(Load::Loading);
            wasm_bindgen_futures::spawn_local(async move {
                let log = log_request(&state);
                list.set(match api::list_lookup_tables(&conn, &log).await {
                    Ok(tables) => Load::Loaded(tables),
                    Err(e) => Load::Failed(e.to_string()),
                });
            });
        });
    }
    let onreload = {
        let reload = reload.clone();
        Callback::from(move |_| reload.set(*reload + 1))
    };
    let body = match &*list {
        Load::Idle | Load::Loading => loading(),
        Load::Failed(message) => failed(message),
        Load::Loaded(tables) if tables.is_empty() => html! {
            <p class="hint" id="tables-empty">{ "No lookup tables yet. A table is made with POST /api/app/projects/{id}/lookup-tables and filled by sending a CSV file to PUT /lookup-tables/{table id}." }</p>
        },
        Load::Loaded(tables) => html! {
            <table id="table-list" class="schemas cards">
                <thead><tr>
                    <th scope="col">{ "Name" }</th><th scope="col" class="count">{ "Rows" }</th>
                    <th scope="col">{ "Columns" }</th><th scope="col">{ "Updated" }</th>
                </tr></thead>
                <tbody>{ for tables.iter().map(|t| {
                    let onclick = {
                        let (state, id) = (state.clone(), t.id.clone());
                        Callback::from(move |_| go(&state, DataView::Tables(Some(id.clone()))))
                    };
                    let is_open = props.open.as_deref() == Some(t.id.as_str());
                    html! {
                        <tr class={classes!("table-row", is_open.then_some("open"))} data-id={t.id.clone()}>
                            <td data-label="Name"><button class="link open-table" {onclick} aria-label={format!("Rows of {}", t.name)}>{ t.name.clone() }</button></td>
                            <td data-label="Rows" class="count">{ t.row_count }</td>
                            <td data-label="Columns">{ t.columns.join(", ") }</td>
                            <td data-label="Updated">{ time_text(t.updated_at) }</td>
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

/// A table and the rows read so far.
#[derive(Debug, Clone, PartialEq)]
struct Read {
    table: LookupTable,
    rows: Vec<Vec<String>>,
    /// The cursor of the next page; `None` once the last was read.
    next_cursor: Option<String>,
}

#[derive(Properties, PartialEq)]
struct TableRowsProps {
    table_id: String,
    onclose: Callback<()>,
}

/// One lookup table in the side panel: its rows, one card per row on a phone.
#[component]
fn TableRows(props: &TableRowsProps) -> Html {
    let state = use_app_state();
    let read = use_state(|| Load::<Read>::Idle);
    let more = use_state(|| More::Idle);
    {
        let (state, read, id) = (state.clone(), read.clone(), props.table_id.clone());
        use_effect_with(state.connection.clone(), move |conn| {
            let Some(conn) = conn.clone() else { return };
            read.set(Load::Loading);
            wasm_bindgen_futures::spawn_local(async move {
                let log = log_request(&state);
                read.set(match api::lookup_table_page(&conn, &id, None, &log).await {
                    Ok(page) => {
                        let (table, rows) = page.results.split();
                        Load::Loaded(Read {
                            table,
                            rows,
                            next_cursor: page.next_cursor,
                        })
                    }
                    Err(e) => Load::Failed(e.to_string()),
                });
            });
        });
    }
    let show_more = {
        let (state, read, more, id) = (
            state.clone(),
            read.clone(),
            more.clone(),
            props.table_id.clone(),
        );
        Callback::from(move |_| {
            let (Some(conn), Load::Loaded(current)) = (state.connection.clone(), (*read).clone())
            else {
                return;
            };
            let Some(cursor) = current.next_cursor.clone() else {
                return;
            };
            let (state, read, more, id) = (state.clone(), read.clone(), more.clone(), id.clone());
            more.set(More::Loading);
            wasm_bindgen_futures::spawn_local(async move {
                let log = log_request(&state);
                match api::lookup_table_page(&conn, &id, Some(&cursor), &log).await {
                    Ok(page) => {
                        let (table, more_rows) = page.results.split();
                        let mut rows = current.rows;
                        rows.extend(more_rows);
                        read.set(Load::Loaded(Read {
                            table,
                            rows,
                            next_cursor: page.next_cursor,
                        }));
                        more.set(More::Idle);
                    }
                    Err(e) => more.set(More::Failed(e.to_string())),
                }
            });
        })
    };
    {
        let shown = match &*read {
            Load::Loaded(r) => r.rows.len(),
            _ => 0,
        };
        use_effect_with(shown, |_| super::focus_if_lost("rows-count"));
    }
    let onclose = props.onclose.reform(|_: MouseEvent| ());
    let content = match &*read {
        Load::Idle | Load::Loading => loading(),
        Load::Failed(message) => failed(message),
        Load::Loaded(r) => {
            // A column without a header (never stored so, but a table read half-way through a
            // change could be) is named by its position rather than left blank.
            let column = |i: usize| {
                r.table
                    .columns
                    .get(i)
                    .cloned()
                    .unwrap_or_else(|| format!("Column {}", i + 1))
            };
            let width = r
                .rows
                .iter()
                .map(Vec::len)
                .max()
                .unwrap_or(0)
                .max(r.table.columns.len());
            html! {
                <>
                    <p class="hint" id="rows-count">{ format!("{} of {} shown", count(r.rows.len() as u64, "row", "rows"), r.table.row_count) }</p>
                    if r.rows.is_empty() {
                        <p class="hint">{ "This table has no rows yet; send it a CSV file with PUT /lookup-tables/{table id}." }</p>
                    } else {
                        <div class="table-wrap">
                        <table id="table-rows" class="schemas cards">
                            <thead><tr>{ for (0..width).map(|i| html! { <th scope="col">{ column(i) }</th> }) }</tr></thead>
                            <tbody>{ for r.rows.iter().map(|row| html! {
                                <tr>{ for (0..width).map(|i| html! {
                                    <td data-label={column(i)}>{ row.get(i).cloned().unwrap_or_default() }</td>
                                }) }</tr>
                            }) }</tbody>
                        </table>
                        </div>
                    }
                    if r.next_cursor.is_some() {
                        <div class="actions">
                            <button id="rows-more" onclick={show_more} disabled={*more == More::Loading}>{ "Show more rows" }</button>
                        </div>
                    }
                    { match &*more {
                        More::Idle => html! {},
                        More::Loading => loading(),
                        More::Failed(message) => failed(message),
                    } }
                </>
            }
        }
    };
    // The heading is there from the start, so that the panel focuses it on opening.
    let heading = match &*read {
        Load::Loaded(r) => r.table.name.clone(),
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
