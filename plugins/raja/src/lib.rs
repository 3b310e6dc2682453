//! `libkprof_raja.so`: kprof's RAJA runtime plugin (being written).
