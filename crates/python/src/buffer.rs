//! Python's buffer protocol (`bytes`, `bytearray`, `memoryview`, `array`,
//! numpy arrays …) without per-element conversion.
//!
//! The wheel targets the stable ABI of CPython 3.9, whose limited API
//! gained `PyObject_GetBuffer` only in 3.11; the function and the
//! `Py_buffer` layout have been the same, and exported, since CPython 3.3,
//! so they are declared here.

use pyo3::exceptions::{PyBufferError, PyTypeError};
use pyo3::prelude::*;
use std::ffi::{c_char, c_int, c_void};

/// `Py_buffer` (CPython's layout since 3.3; in the stable ABI from 3.11).
#[repr(C)]
struct RawBuffer {
    buf: *mut c_void,
    obj: *mut pyo3::ffi::PyObject,
    len: isize,
    itemsize: isize,
    readonly: c_int,
    ndim: c_int,
    format: *mut c_char,
    shape: *mut isize,
    strides: *mut isize,
    suboffsets: *mut isize,
    internal: *mut c_void,
}

extern "C" {
    fn PyObject_GetBuffer(obj: *mut pyo3::ffi::PyObject, view: *mut RawBuffer, flags: c_int) -> c_int;
    fn PyBuffer_Release(view: *mut RawBuffer);
}

/// `PyBUF_SIMPLE`: contiguous bytes.
const PYBUF_SIMPLE: c_int = 0;
/// `PyBUF_WRITABLE`.
const PYBUF_WRITABLE: c_int = 1;

/// A contiguous buffer held from a Python object (released on drop). Its
/// bytes stay where they are while it is held: a `bytearray` cannot be
/// resized, so the bytes may be used with the GIL released.
pub struct Buf {
    view: Box<RawBuffer>,
}

impl std::fmt::Debug for Buf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Buf").field("len", &self.len()).field("itemsize", &self.view.itemsize).finish()
    }
}

impl Buf {
    /// The bytes of `obj` if it offers the buffer protocol, `None` if it
    /// does not; `Err` if it does but not as contiguous bytes.
    pub fn try_get(obj: &Bound<'_, PyAny>) -> PyResult<Option<Buf>> {
        match Buf::get(obj, false) {
            Ok(b) => Ok(Some(b)),
            Err(e) if e.is_instance_of::<PyTypeError>(obj.py()) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The contiguous bytes of `obj`, writable ones if `writable`.
    pub fn get(obj: &Bound<'_, PyAny>, writable: bool) -> PyResult<Buf> {
        let mut view = Box::new(RawBuffer {
            buf: std::ptr::null_mut(),
            obj: std::ptr::null_mut(),
            len: 0,
            itemsize: 0,
            readonly: 0,
            ndim: 0,
            format: std::ptr::null_mut(),
            shape: std::ptr::null_mut(),
            strides: std::ptr::null_mut(),
            suboffsets: std::ptr::null_mut(),
            internal: std::ptr::null_mut(),
        });
        let flags = if writable { PYBUF_WRITABLE } else { PYBUF_SIMPLE };
        // SAFETY: `obj` is a live object (we hold the GIL) and `view` a
        // Py_buffer-sized, Py_buffer-aligned place the call fills.
        let rc = unsafe { PyObject_GetBuffer(obj.as_ptr(), &mut *view, flags) };
        if rc != 0 {
            let err = PyErr::take(obj.py()).unwrap_or_else(|| PyBufferError::new_err("buffer not available"));
            let tname = obj.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "?".into());
            let py = obj.py();
            let refused_write = writable && err.is_instance_of::<PyBufferError>(py);
            return Err(if err.is_instance_of::<PyTypeError>(py) || refused_write {
                if writable {
                    PyTypeError::new_err(format!(
                        "a writable buffer is needed (bytearray, memoryview, array.array, numpy array), not {tname}"
                    ))
                } else {
                    PyTypeError::new_err(format!(
                        "a bytes-like object is needed (bytes, bytearray, memoryview, array.array, numpy array), \
                         not {tname}"
                    ))
                }
            } else {
                err
            });
        }
        if view.buf.is_null() && view.len != 0 {
            // SAFETY: the view was filled by a successful PyObject_GetBuffer.
            unsafe { PyBuffer_Release(&mut *view) };
            return Err(PyBufferError::new_err("the object exported a buffer with no memory"));
        }
        Ok(Buf { view })
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        usize::try_from(self.view.len).unwrap_or(0)
    }

    /// Bytes per item (1 for `bytes`; 2 for `array('H')` …).
    pub fn itemsize(&self) -> usize {
        usize::try_from(self.view.itemsize).unwrap_or(1)
    }

    /// The bytes.
    pub fn as_slice(&self) -> &[u8] {
        if self.len() == 0 {
            return &[];
        }
        // SAFETY: a held buffer's memory is `len` readable bytes at `buf`
        // until released, which needs `&mut self` (drop).
        unsafe { std::slice::from_raw_parts(self.view.buf.cast::<u8>(), self.len()) }
    }

    /// The bytes, to write (only for a buffer asked for as writable).
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        if self.len() == 0 || self.view.readonly != 0 {
            return &mut [];
        }
        // SAFETY: as above; writable was asked for and granted.
        unsafe { std::slice::from_raw_parts_mut(self.view.buf.cast::<u8>(), self.len()) }
    }
}

impl Drop for Buf {
    fn drop(&mut self) {
        Python::attach(|_| {
            // SAFETY: filled by a successful PyObject_GetBuffer, released once.
            unsafe { PyBuffer_Release(&mut *self.view) };
        });
    }
}
