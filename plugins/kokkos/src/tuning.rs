//! The Kokkos Tools tuning callbacks, forwarded to a chained tool.
//!
//! kprof does no tuning itself, but a tuning tool chained after it
//! (`KOKKOS_TOOLS_LIBS="libkprof.so;libtuner.so"`) must still get Kokkos' tuning
//! calls. Exporting them unconditionally would change Kokkos when no chained tool
//! tunes: Kokkos (built with `Kokkos_ENABLE_TUNING`) takes the presence of
//! `kokkosp_request_values` as "a tuning tool is loaded" (`have_tuning_tool()`), and
//! its own tuners (`--kokkos-tune-internals`) then apply whatever values come back:
//! values that a do-nothing forwarder leaves at the tuner's starting point (team
//! sizes, MDRange tiles of 1), not Kokkos' defaults.
//!
//! So each tuning symbol is a GNU indirect function: Kokkos' `dlsym` runs its
//! resolver, which loads the chained tool (Kokkos looks the symbols up before it
//! initializes the tool) and answers the forwarder when that tool exports the same
//! callback, and NULL otherwise: to Kokkos the symbol is then absent, exactly as if
//! kprof did not export it.

use std::ffi::c_char;

use kprof_abi::guard::guard;

use crate::chain::{self, next, Next};
use crate::types::{OptimizationGoal, VariableInfo, VariableValue};

/// The address `forwarder` when the next tool exports the callback `has` looks
/// for, else 0. Loads the next tool first if `kokkosp_init_library` has not yet.
fn resolve(has: fn(&Next) -> bool, forwarder: usize) -> usize {
    guard(0, || {
        if chain::loading() {
            // The next tool, being loaded, binds one of its own references to this
            // symbol: give it the forwarder, which calls it back once it is loaded.
            return forwarder;
        }
        let own = kprof_abi::loader::library_path(crate::anchor());
        // A load error is reported once, by kokkosp_init_library.
        let _ = chain::load(0, own.as_deref());
        match next() {
            Some(n) if has(n) => forwarder,
            _ => 0,
        }
    })
}

macro_rules! tuning_callbacks {
    ($($sym:ident, $fwd:ident, $field:ident, fn($($arg:ident: $ty:ty),*);)*) => {
        $(
            /// Forwards this tuning callback to the next tool.
            ///
            /// # Safety
            /// Called by Kokkos with the arguments of the Kokkos Tools interface.
            unsafe extern "C" fn $fwd($($arg: $ty),*) {
                guard((), || {
                    if let Some(f) = next().and_then(|n| n.$field) {
                        // SAFETY: forwarding Kokkos' arguments unchanged.
                        unsafe { f($($arg),*) };
                    }
                })
            }

            /// The resolver of this GNU indirect function symbol (see the module
            /// documentation): the forwarder when the next tool exports the callback,
            /// else NULL. Only the dynamic loader calls it.
            #[no_mangle]
            pub extern "C" fn $sym() -> usize {
                resolve(|n| n.$field.is_some(), $fwd as *const () as usize)
            }
        )*

        // Each resolver's symbol is typed STT_GNU_IFUNC (the assembler combines this
        // with the function type it emits for the definition, in the same object).
        std::arch::global_asm!(
            $(concat!(".type ", stringify!($sym), ", %gnu_indirect_function"),)*
        );
    };
}

tuning_callbacks! {
    kokkosp_declare_output_type, fwd_declare_output_type, declare_output_type,
        fn(name: *const c_char, id: usize, info: *mut VariableInfo);
    kokkosp_declare_input_type, fwd_declare_input_type, declare_input_type,
        fn(name: *const c_char, id: usize, info: *mut VariableInfo);
    kokkosp_request_values, fwd_request_values, request_values,
        fn(context: usize, n_in: usize, inputs: *const VariableValue, n_out: usize,
           outputs: *mut VariableValue);
    kokkosp_begin_context, fwd_begin_context, begin_context, fn(context: usize);
    kokkosp_end_context, fwd_end_context, end_context,
        fn(context: usize, value: VariableValue);
    kokkosp_declare_optimization_goal, fwd_declare_optimization_goal,
        declare_optimization_goal, fn(context: usize, goal: OptimizationGoal);
}
