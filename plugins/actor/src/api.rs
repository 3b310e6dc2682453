//! Route 3: the functions of `ffi-headers/kprof_actor.h` that HClib-Actor (or
//! the program) may call where ActorProf's macros are.

use std::ffi::{c_char, c_int, c_void, CStr};

use kprof_abi::guard::guard;
use kprof_abi::Kind;

use crate::state::{self, Row};

/// Names a conveyor as a selector's mailbox.
#[no_mangle]
pub extern "C" fn kprof_actor_mailbox(conveyor: *const c_void, selector: c_int, mailbox: c_int) {
    guard((), || {
        if let Some(api) = crate::connect::api_or_connect() {
            state::describe(
                api,
                conveyor as usize,
                "mailbox",
                &format!("selector {selector} mailbox {mailbox}"),
            );
        }
    })
}

/// Names the actor phase now running.
///
/// # Safety
/// `name` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn kprof_actor_phase(name: *const c_char) {
    guard((), || {
        let Some(api) = crate::connect::api_or_connect() else {
            return;
        };
        let text = if name.is_null() {
            "<null>".into()
        } else {
            // SAFETY: NUL-terminated by the contract.
            unsafe { CStr::from_ptr(name) }.to_string_lossy()
        };
        state::meta(api, "actor.phase", &text);
        if let Ok(n) = std::ffi::CString::new(format!("actor phase {text}")) {
            // SAFETY: a NUL-terminated name, copied by the core.
            unsafe { (api.instant)(Kind::Marker as u8, n.as_ptr(), 0, 0) };
        }
    })
}

/// A mailbox called done.
#[no_mangle]
pub extern "C" fn kprof_actor_done(selector: c_int, mailbox: c_int) {
    guard((), || {
        if let Some(api) = crate::connect::api_or_connect() {
            // SAFETY: a NUL-terminated literal.
            unsafe {
                (api.instant)(
                    Kind::Marker as u8,
                    c"actor done".as_ptr(),
                    selector as u64,
                    mailbox as u64,
                )
            };
        }
    })
}

fn direct() -> Option<&'static (Row, Row)> {
    crate::connect::api_or_connect()?;
    // Called by a running FA-BSP program: OpenSHMEM is initialized.
    crate::shmem_counts::learn_pes();
    let n = state::n_pes();
    Some(state::DIRECT.get_or_init(|| (Row::new(n), Row::new(n))))
}

/// A logical message sent without Conveyors.
#[no_mangle]
pub extern "C" fn kprof_actor_send(pe: i64, bytes: u64) {
    guard((), || {
        if let Some((send, _)) = direct() {
            if !send.add(pe, 1, bytes) {
                state::bump(&state::ODD.bad_peer, 1);
            }
        }
    })
}

/// A logical message received without Conveyors.
#[no_mangle]
pub extern "C" fn kprof_actor_receive(pe: i64, bytes: u64) {
    guard((), || {
        if let Some((_, recv)) = direct() {
            if !recv.add(pe, 1, bytes) {
                state::bump(&state::ODD.bad_peer, 1);
            }
        }
    })
}
