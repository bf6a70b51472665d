//! One module per screen.

pub mod dictionary;
pub mod planned;
pub mod settings;
