//! One module per screen.

pub mod bulk;
pub mod data;
pub mod dictionary;
pub mod import;
pub mod migrate;
pub mod quality;
pub mod settings;
pub mod warehouse;
