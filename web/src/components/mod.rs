//! Components shared by several pages.

pub mod log;
