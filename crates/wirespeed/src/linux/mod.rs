//! Linux backends.
