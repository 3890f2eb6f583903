//! Bytes from Python arguments: buffers as they are (no per-element
//! conversion), sequences of ints as py-spidev takes them.

use crate::buffer::Buf;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyList, PyString, PyTuple};
use std::fmt::Display;

/// Bytes taken from an argument.
#[derive(Debug)]
pub enum Bytes {
    /// A buffer's own memory (held until dropped).
    Buf(Buf),
    /// Converted from a sequence of ints.
    Vec(Vec<u8>),
}

impl Bytes {
    /// The bytes.
    pub fn as_slice(&self) -> &[u8] {
        match self {
            Bytes::Buf(b) => b.as_slice(),
            Bytes::Vec(v) => v,
        }
    }
}

fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "?".into())
}

fn byte_of(item: &Bound<'_, PyAny>, i: usize, what: impl Display) -> PyResult<u8> {
    let v: i64 = item.extract().map_err(|_| {
        PyTypeError::new_err(format!("{what}: element {i} is a {}, not an int (0..255)", type_name(item)))
    })?;
    u8::try_from(v).map_err(|_| PyValueError::new_err(format!("{what}: element {i} is {v}, not a byte (0..255)")))
}

/// A sequence of ints (each 0..=255) as bytes.
/// `what` names the argument in errors; it is formatted only when there is one.
pub fn seq_bytes(obj: &Bound<'_, PyAny>, what: impl Display + Copy) -> PyResult<Vec<u8>> {
    if obj.is_instance_of::<PyString>() {
        return Err(PyTypeError::new_err(format!(
            "{what}: expected bytes or a sequence of ints, not str (encode it first: s.encode())"
        )));
    }
    if let Ok(list) = obj.cast::<PyList>() {
        return list.iter().enumerate().map(|(i, x)| byte_of(&x, i, what)).collect();
    }
    if let Ok(t) = obj.cast::<PyTuple>() {
        return t.iter().enumerate().map(|(i, x)| byte_of(&x, i, what)).collect();
    }
    let iter = obj.try_iter().map_err(|_| {
        PyTypeError::new_err(format!(
            "{what}: expected a bytes-like object or a sequence of ints, not {}",
            type_name(obj)
        ))
    })?;
    let mut out = Vec::with_capacity(obj.len().unwrap_or(0));
    for (i, x) in iter.enumerate() {
        out.push(byte_of(&x?, i, what)?);
    }
    Ok(out)
}

/// The bytes of `obj`: a buffer's memory as it is (any item size when
/// `raw`, else only 1-byte items, as py-spidev's sequences), or a
/// sequence of ints.
pub fn bytes_arg(obj: &Bound<'_, PyAny>, what: impl Display + Copy, raw: bool) -> PyResult<Bytes> {
    match Buf::try_get(obj) {
        Ok(Some(b)) if raw || b.itemsize() == 1 => return Ok(Bytes::Buf(b)),
        Ok(_) => {}
        // Not contiguous: as py-spidev, its elements one by one.
        Err(_) if !raw => {}
        Err(e) => {
            return Err(PyValueError::new_err(format!(
            "{what}: the buffer is not contiguous ({e}); pass a contiguous copy (bytes(x), numpy.ascontiguousarray(x))"
        )))
        }
    }
    seq_bytes(obj, what).map(Bytes::Vec)
}
