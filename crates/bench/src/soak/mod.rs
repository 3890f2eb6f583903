//! `wirespeed soak`: everything at once, for long, with faults injected.
