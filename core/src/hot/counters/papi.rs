//! PAPI, loaded at run time: the calls kprof makes, each checked, with PAPI's own
//! words for what went wrong. The only `unsafe` of the counters lives here.

use std::ffi::{c_int, c_longlong, c_ulong, CStr, CString};

use super::papi_sys::{self as sys, Papi as Sys};
use super::values::MAX_COUNTERS;

/// Names tried for the library when `KPROF_PAPI_LIB` is not set: the development
/// link first, then the runtime packages' sonames (Debian's libpapi7.x).
const LIBRARY_NAMES: &[&str] = kprof_tables::libraries::PAPI.names;

/// Why PAPI cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum PapiError {
    /// The library did not load or lacks a function kprof calls.
    #[error("cannot load PAPI ({0}); set KPROF_PAPI_LIB to the path of libpapi.so")]
    Load(String),
    /// `PAPI_library_init` refused.
    #[error("PAPI did not initialize: {0}")]
    Init(String),
}

/// An event set of the calling thread (PAPI binds an event set to the thread
/// that created it).
#[derive(Debug, Clone, Copy)]
pub struct EventSet(c_int);

/// The loaded library, initialized for threads.
pub struct Papi {
    sys: Sys,
    /// The PAPI version it reported (major.minor.revision).
    pub version: String,
}

/// What PAPI_thread_init needs: a unique id per thread.
extern "C" fn thread_id() -> c_ulong {
    // SAFETY: pthread_self has no preconditions.
    unsafe { libc::pthread_self() as c_ulong }
}

impl Papi {
    /// Loads `path` (or the usual names) and initializes PAPI for threads.
    pub fn load(path: Option<&str>) -> Result<Papi, PapiError> {
        let names: Vec<&str> = match path {
            Some(p) => vec![p],
            None => LIBRARY_NAMES.to_vec(),
        };
        let mut last = String::new();
        let mut loaded = None;
        for name in names {
            // SAFETY: loading PAPI runs its constructors, which only register its
            // components; every symbol is checked against the declared types below
            // by name (the declarations come from PAPI's own header).
            match unsafe { Sys::new(name) } {
                Ok(s) => {
                    loaded = Some(s);
                    break;
                }
                Err(e) => {
                    // libloading keeps dlerror()'s words as the source.
                    last = match std::error::Error::source(&e) {
                        Some(why) => format!("{why}"),
                        None => format!("{name}: {e}"),
                    }
                }
            }
        }
        let sys = loaded.ok_or(PapiError::Load(last))?;
        // PAPI_library_init takes the major version the caller was built for and
        // refuses another: PAPI 7, else 6 (same calls and values for what kprof uses).
        let mut version = 0;
        for major in [7, 6] {
            let want: c_int = major << 24;
            // SAFETY: no preconditions; a second initialization (the program uses
            // PAPI itself) returns the version again.
            let got = unsafe { (sys.PAPI_library_init)(want) };
            if got == want {
                version = got;
                break;
            }
            if got > 0 {
                version = got;
            }
        }
        if version <= 0 || version >> 24 < 6 {
            return Err(PapiError::Init(format!("version {version:#x} refused")));
        }
        let papi = Papi {
            sys,
            version: format!(
                "{}.{}.{}",
                version >> 24 & 0xff,
                version >> 16 & 0xff,
                version >> 8 & 0xff
            ),
        };
        // SAFETY: a function with the signature PAPI expects; called once, before
        // any event set exists (a second call after the program's own is harmless).
        let r = unsafe { (papi.sys.PAPI_thread_init)(Some(thread_id)) };
        papi.check(r).map_err(PapiError::Init)?;
        Ok(papi)
    }

    /// PAPI's message for error code `code`.
    pub fn strerror(&self, code: c_int) -> String {
        // SAFETY: PAPI_strerror returns NULL or a static NUL-terminated string.
        let p = unsafe { (self.sys.PAPI_strerror)(code) };
        if p.is_null() {
            return format!("PAPI error {code}");
        }
        // SAFETY: non-null, static and NUL-terminated (above).
        let text = unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned();
        format!("{text} (PAPI error {code})")
    }

    fn check(&self, r: c_int) -> Result<(), String> {
        if r == sys::PAPI_OK as c_int {
            Ok(())
        } else {
            Err(self.strerror(r))
        }
    }

    /// A new, empty event set of the calling thread.
    pub fn create(&self) -> Result<EventSet, String> {
        let mut set: c_int = sys::PAPI_NULL;
        // SAFETY: `set` is a valid out-pointer initialized to PAPI_NULL, as required.
        let r = unsafe { (self.sys.PAPI_create_eventset)(&mut set) };
        self.check(r).map(|()| EventSet(set))
    }

    /// Makes `set` (empty) multiplexed: more events than counters, each counted
    /// part of the time and scaled.
    pub fn multiplex(&self, set: EventSet) -> Result<(), String> {
        // SAFETY: no arguments; PAPI allows repeated calls.
        self.check(unsafe { (self.sys.PAPI_multiplex_init)() })?;
        // A multiplexed set must name its component first: the CPU one (0).
        // SAFETY: `set` is an event set of this thread.
        self.check(unsafe { (self.sys.PAPI_assign_eventset_component)(set.0, 0) })?;
        // SAFETY: as above.
        self.check(unsafe { (self.sys.PAPI_set_multiplex)(set.0) })
    }

    /// Adds the event named `name` to `set`; the error code on failure.
    pub fn add(&self, set: EventSet, name: &str) -> Result<(), c_int> {
        let Ok(c) = CString::new(name) else {
            return Err(sys::PAPI_EINVAL);
        };
        // SAFETY: `set` is an event set of this thread, `c` a NUL-terminated name.
        let r = unsafe { (self.sys.PAPI_add_named_event)(set.0, c.as_ptr()) };
        if r == sys::PAPI_OK as c_int {
            Ok(())
        } else {
            Err(r)
        }
    }

    /// Whether PAPI knows an event of this name (on this machine's components).
    pub fn knows(&self, name: &str) -> bool {
        let Ok(c) = CString::new(name) else {
            return false;
        };
        let mut code: c_int = 0;
        // SAFETY: `c` is NUL-terminated, `code` a valid out-pointer.
        let r = unsafe { (self.sys.PAPI_event_name_to_code)(c.as_ptr(), &mut code) };
        r == sys::PAPI_OK as c_int
    }

    /// Starts counting.
    pub fn start(&self, set: EventSet) -> Result<(), String> {
        // SAFETY: `set` is an event set of this thread.
        self.check(unsafe { (self.sys.PAPI_start)(set.0) })
    }

    /// Reads the running counters of `set` (at most [`MAX_COUNTERS`] events) into
    /// `out`: the hot path's one call. False when PAPI failed (out unchanged).
    #[inline(always)]
    pub fn read(&self, set: EventSet, out: &mut [u64; MAX_COUNTERS]) -> bool {
        // SAFETY: `set` holds at most MAX_COUNTERS events (Counters::setup adds no
        // more), so PAPI writes within `out`; it is this thread's set. PAPI's
        // counts are non-negative 64-bit values in a signed type of the same size.
        let r = unsafe { (self.sys.PAPI_read)(set.0, out.as_mut_ptr().cast::<c_longlong>()) };
        r == sys::PAPI_OK as c_int
    }

    /// Stops and frees `set` and PAPI's record of the calling thread (the thread
    /// is ending, or the set was only a probe).
    pub fn release(&self, set: EventSet, unregister: bool) {
        let mut scratch = [0i64; MAX_COUNTERS];
        let mut s = set.0;
        // SAFETY: `set` is this thread's; the stop writes at most MAX_COUNTERS
        // values; failures (a set never started) are harmless and ignored.
        unsafe {
            (self.sys.PAPI_stop)(s, scratch.as_mut_ptr().cast::<c_longlong>());
            (self.sys.PAPI_cleanup_eventset)(s);
            (self.sys.PAPI_destroy_eventset)(&mut s);
            if unregister {
                (self.sys.PAPI_unregister_thread)();
            }
        }
    }
}

/// Error codes that mean "these events cannot be counted at the same time".
pub fn is_conflict(code: c_int) -> bool {
    matches!(
        code,
        sys::PAPI_ECNFLCT | sys::PAPI_ECOMBO | sys::PAPI_ENOCNTR | sys::PAPI_EMULPASS
    )
}
