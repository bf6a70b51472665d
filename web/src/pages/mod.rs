//! One module per screen.

pub mod bulk;
pub mod dictionary;
pub mod import;
pub mod planned;
pub mod settings;
