//! The one reader of the Data screen: a component that reads one answer of the server's read API
//! (a user profile, a page of group profiles, a group profile, the lookup tables, a table's rows)
//! and shows it through its tab's view. Lists read a page at a time append each next page's rows
//! to the answer so far. The screen only shows what it reads, so every answer stays JSON; one state
//! machine over `Load<Value>` serves every tab instead of one per answer type.

use super::{focus_if_lost, groups, profiles, tables, More};
use crate::api::{self, Connection};
use crate::components::log::log_request;
use crate::state::{use_app_state, Load, StateHandle};
use serde_json::Value;
use yew::prelude::*;

/// What a [`Reader`] reads and how it shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// The user profile of `arg`.
    Profile,
    /// The group profiles of the group key `arg` (all keys when it is empty), a page at a time.
    Groups,
    /// The group profile of the key `arg` and the id `arg2`, in the side panel.
    Group,
    /// The lookup tables.
    Tables,
    /// The rows of the lookup table `arg`, a page at a time, in the side panel.
    Rows,
}

impl Kind {
    /// The URL of the answer, or of the page after `cursor`.
    fn url(self, conn: &Connection, arg: &str, arg2: &str, cursor: Option<&str>) -> String {
        match self {
            Kind::Profile => api::profile_url(conn, arg),
            Kind::Groups => api::groups_url(conn, Some(arg).filter(|k| !k.is_empty()), cursor),
            Kind::Group => api::group_url(conn, arg, arg2),
            Kind::Tables => api::lookup_tables_url(conn),
            Kind::Rows => api::lookup_table_url(conn, arg, cursor),
        }
    }

    /// For a list read a page at a time: where an answer's rows are (a JSON pointer), the field of
    /// its cursor, and the id of the count of rows shown.
    fn paging(self) -> Option<(&'static str, &'static str, &'static str)> {
        match self {
            Kind::Groups => Some(("/results", "next_after", "groups-count")),
            Kind::Rows => Some(("/results/rows", "next_cursor", "rows-count")),
            _ => None,
        }
    }
}

#[derive(Properties, PartialEq)]
pub(crate) struct ReaderProps {
    pub kind: Kind,
    /// The user id, the group key, or the table id.
    #[prop_or_default]
    pub arg: String,
    /// The group id of a group profile.
    #[prop_or_default]
    pub arg2: String,
    /// What a list marks as open in the side panel: a table id, or a group's key and id.
    #[prop_or_default]
    pub open: Option<(String, String)>,
    /// Changed to read the answer again.
    #[prop_or_default]
    pub reload: u32,
}

/// What a tab's view is given to show.
pub(crate) struct Shown<'a> {
    pub props: &'a ReaderProps,
    pub state: &'a StateHandle,
    pub load: &'a Load<Value>,
    /// The state of the next page, and the callback that reads it.
    pub more: &'a More,
    pub show_more: Callback<MouseEvent>,
    /// The rows of a list read so far.
    pub rows: &'a [Value],
}

/// A next page being read: its "Show more" state, the answer so far, and where in an answer its
/// rows are, so that the new page's rows are appended to those read before.
struct Next {
    more: UseStateHandle<More>,
    so_far: Value,
    rows: &'static str,
}

/// Reads `url` into `target`, or, with `next`, appends the page's rows to the answer so far.
fn read(
    state: &StateHandle,
    conn: Connection,
    url: String,
    target: UseStateHandle<Load<Value>>,
    next: Option<Next>,
) {
    match &next {
        Some(n) => n.more.set(More::Loading),
        None => target.set(Load::Loading),
    }
    let state = state.clone();
    wasm_bindgen_futures::spawn_local(async move {
        let log = log_request(&state);
        let answer = api::read_data(&conn, &url, &log)
            .await
            .map_err(|e| e.to_string());
        match (answer, next) {
            (
                Ok(mut page),
                Some(Next {
                    more,
                    mut so_far,
                    rows,
                }),
            ) => {
                if let (Some(Value::Array(old)), Some(Value::Array(new))) =
                    (so_far.pointer_mut(rows), page.pointer_mut(rows))
                {
                    old.append(new);
                    std::mem::swap(old, new);
                }
                target.set(Load::Loaded(page));
                more.set(More::Idle);
            }
            (Err(message), Some(n)) => n.more.set(More::Failed(message)),
            (answer, None) => target.set(answer.map_or_else(Load::Failed, Load::Loaded)),
        }
    });
}

#[component]
pub(crate) fn Reader(props: &ReaderProps) -> Html {
    let state = use_app_state();
    let load = use_state(|| Load::<Value>::Idle);
    let more = use_state(|| More::Idle);
    {
        let (state, load, more) = (state.clone(), load.clone(), more.clone());
        use_effect_with(
            (
                state.connection.clone(),
                props.kind,
                props.arg.clone(),
                props.arg2.clone(),
                props.reload,
            ),
            move |(conn, kind, arg, arg2, _)| {
                more.set(More::Idle);
                let Some(conn) = conn.clone() else {
                    // Without a connection a profile shows nothing; a list keeps what it shows.
                    if *kind == Kind::Profile {
                        load.set(Load::Idle);
                    }
                    return;
                };
                let url = kind.url(&conn, arg, arg2, None);
                read(&state, conn, url, load, None);
            },
        );
    }
    let show_more = {
        let (state, load, more) = (state.clone(), load.clone(), more.clone());
        let (kind, arg, arg2) = (props.kind, props.arg.clone(), props.arg2.clone());
        Callback::from(move |_| {
            let (Some(conn), Load::Loaded(so_far), Some((rows, cursor, _))) =
                (state.connection.clone(), (*load).clone(), kind.paging())
            else {
                return;
            };
            let Some(cursor) = so_far[cursor].as_str() else {
                return;
            };
            let url = kind.url(&conn, &arg, &arg2, Some(cursor));
            let next = Next {
                more: more.clone(),
                so_far,
                rows,
            };
            read(&state, conn, url, load.clone(), Some(next));
        })
    };
    let paging = props.kind.paging();
    let rows = match (&*load, paging) {
        (Load::Loaded(answer), Some((rows, _, _))) => answer
            .pointer(rows)
            .and_then(Value::as_array)
            .map_or(&[][..], Vec::as_slice),
        _ => &[],
    };
    // The "Show more" button that was clicked is gone once the last page is read: the count of
    // rows shown takes the focus then.
    use_effect_with(rows.len(), move |_| {
        if let Some((_, _, count)) = paging {
            focus_if_lost(count);
        }
    });
    let shown = Shown {
        props,
        state: &state,
        load: &load,
        more: &more,
        show_more,
        rows,
    };
    match props.kind {
        Kind::Profile => profiles::profile_view(&shown),
        Kind::Groups => groups::groups_view(&shown),
        Kind::Group => groups::group_view(&shown),
        Kind::Tables => tables::tables_view(&shown),
        Kind::Rows => tables::rows_view(&shown),
    }
}
