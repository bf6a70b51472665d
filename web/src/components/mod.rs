//! Components shared by several pages.

pub mod download;
pub mod entity_form;
pub mod log;
pub mod side_panel;
