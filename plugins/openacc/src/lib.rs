//! `libkprof_acc.so`: kprof's OpenACC profiling plugin (being written).
