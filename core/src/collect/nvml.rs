//! NVIDIA GPUs' power for the system sampler, through NVML (`libnvidia-ml.so.1`,
//! installed with the driver), loaded at run time when present: kprof neither
//! links nor needs it. The few functions used are declared here from NVML's
//! public API reference.

use std::ffi::{c_int, c_uint, c_void, CStr, CString};

/// `nvmlReturn_t`: 0 is `NVML_SUCCESS`.
type NvmlReturn = c_int;
/// `nvmlDevice_t`: an opaque handle.
type NvmlDevice = *mut c_void;

type InitFn = unsafe extern "C" fn() -> NvmlReturn;
type CountFn = unsafe extern "C" fn(*mut c_uint) -> NvmlReturn;
type HandleFn = unsafe extern "C" fn(c_uint, *mut NvmlDevice) -> NvmlReturn;
type PowerFn = unsafe extern "C" fn(NvmlDevice, *mut c_uint) -> NvmlReturn;

/// The library's name as the driver installs it.
const LIBRARY: &str = "libnvidia-ml.so.1";

/// NVML, initialized, with the devices whose power it reports.
pub struct Nvml {
    power: PowerFn,
    shutdown: InitFn,
    /// (device index, handle) of each device that reported its power at start.
    devices: Vec<(u32, NvmlDevice)>,
}

// SAFETY: NVML's functions are thread-safe, and the handles are only used by the
// thread that owns the sampler (kprof's writer).
unsafe impl Send for Nvml {}

/// Why NVML gives no power figures although its library is there.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum NvmlError {
    /// A function is missing from the library.
    #[error("{library} has no {symbol}")]
    Symbol {
        /// The library loaded.
        library: String,
        /// The missing function.
        symbol: &'static str,
    },
    /// `nvmlInit_v2` or `nvmlDeviceGetCount_v2` failed.
    #[error("NVML's {call} failed (error {code})")]
    Call {
        /// The function.
        call: &'static str,
        /// Its `nvmlReturn_t`.
        code: i32,
    },
    /// No device reports its power.
    #[error("none of NVML's {0} device(s) reports its power")]
    NoPower(u32),
}

impl Nvml {
    /// Loads NVML (`KPROF_NVML_LIB`, else the driver's `libnvidia-ml.so.1`) and
    /// finds the devices that report their power: None without the library (no
    /// NVIDIA driver: nothing to say), an error when it is there but gives none.
    pub fn open() -> Option<Result<Nvml, NvmlError>> {
        let library = kprof_tables::settings::core::NVML_LIB
            .get()
            .unwrap_or_else(|| LIBRARY.into());
        let c = CString::new(library.as_bytes()).ok()?;
        // SAFETY: a valid C string; NVML's initializers have no requirement on
        // the caller. The library is never unloaded (NVML may keep threads).
        let lib = unsafe { libc::dlopen(c.as_ptr(), libc::RTLD_LAZY | libc::RTLD_LOCAL) };
        if lib.is_null() {
            return None;
        }
        Some(Nvml::init(lib, &library))
    }

    fn init(lib: *mut c_void, library: &str) -> Result<Nvml, NvmlError> {
        let symbol = |name: &'static CStr| {
            // SAFETY: `lib` is a live handle and `name` a C string.
            let p = unsafe { libc::dlsym(lib, name.as_ptr()) };
            if p.is_null() {
                Err(NvmlError::Symbol {
                    library: library.into(),
                    symbol: name.to_str().unwrap_or("?"),
                })
            } else {
                Ok(p)
            }
        };
        // SAFETY: each symbol is the NVML function of that name, whose C
        // signature is the function pointer type it is cast to.
        let (init, shutdown, count, handle, power) = unsafe {
            (
                std::mem::transmute::<*mut c_void, InitFn>(symbol(c"nvmlInit_v2")?),
                std::mem::transmute::<*mut c_void, InitFn>(symbol(c"nvmlShutdown")?),
                std::mem::transmute::<*mut c_void, CountFn>(symbol(c"nvmlDeviceGetCount_v2")?),
                std::mem::transmute::<*mut c_void, HandleFn>(symbol(
                    c"nvmlDeviceGetHandleByIndex_v2",
                )?),
                std::mem::transmute::<*mut c_void, PowerFn>(symbol(c"nvmlDeviceGetPowerUsage")?),
            )
        };
        // SAFETY: NVML's documented calls, with pointers to locals.
        unsafe {
            let code = init();
            if code != 0 {
                return Err(NvmlError::Call {
                    call: "nvmlInit_v2",
                    code,
                });
            }
            let mut n: c_uint = 0;
            let code = count(&mut n);
            if code != 0 {
                shutdown();
                return Err(NvmlError::Call {
                    call: "nvmlDeviceGetCount_v2",
                    code,
                });
            }
            let mut devices = Vec::new();
            for i in 0..n {
                let mut dev: NvmlDevice = std::ptr::null_mut();
                let mut mw: c_uint = 0;
                if handle(i, &mut dev) == 0 && power(dev, &mut mw) == 0 {
                    devices.push((i, dev));
                }
            }
            if devices.is_empty() {
                shutdown();
                return Err(NvmlError::NoPower(n));
            }
            Ok(Nvml {
                power,
                shutdown,
                devices,
            })
        }
    }

    /// The NVML index of each device with a power figure, in the order of
    /// [`Nvml::watts`].
    pub fn indices(&self) -> impl Iterator<Item = u32> + '_ {
        self.devices.iter().map(|&(i, _)| i)
    }

    /// Fills `out[i]` with device `i`'s power draw in watts now (NaN when it
    /// gives none this time).
    pub fn watts(&self, out: &mut [f64]) {
        for (slot, &(_, dev)) in out.iter_mut().zip(&self.devices) {
            let mut mw: c_uint = 0;
            // SAFETY: a handle NVML gave, a pointer to a local.
            let code = unsafe { (self.power)(dev, &mut mw) };
            *slot = if code == 0 {
                f64::from(mw) * 1e-3
            } else {
                f64::NAN
            };
        }
    }
}

impl Drop for Nvml {
    fn drop(&mut self) {
        // SAFETY: NVML was initialized by `open`, once per Nvml.
        unsafe {
            (self.shutdown)();
        }
    }
}
