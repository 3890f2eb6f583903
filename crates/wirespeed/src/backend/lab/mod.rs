//! Glue to the emulated lab (`wirespeed-lab`): the only place the stack
//! touches lab types.

pub mod gpio;
