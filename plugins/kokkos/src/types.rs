//! The C types of the Kokkos Tools interface, with the sizes and offsets measured on
//! real Kokkos (see ffi-headers/kokkosp.h and the layout test).

use std::ffi::{c_char, c_void};

/// `Kokkos_Profiling_KokkosPDeviceInfo`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct DeviceInfo {
    /// Device id.
    pub device_id: usize,
}

/// `Kokkos_Profiling_SpaceHandle`: a memory space name, passed by value.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct SpaceHandle {
    /// The name, NUL-terminated unless all 64 bytes are used.
    pub name: [c_char; 64],
}

/// `Kokkos_Tools_ToolSettings`. C `bool`s, declared as bytes so that whatever Kokkos
/// leaves in the padding is a valid value here.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ToolSettings {
    /// Whether Kokkos must fence around every kernel and region (0 or 1).
    pub requires_global_fencing: u8,
    /// Reserved.
    pub padding: [u8; 255],
}

/// `Kokkos_Tools_ToolProgrammingInterface`, passed by value; only the first slot is
/// defined, the rest is padding that Kokkos does not zero.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ToolProgrammingInterface {
    /// Runs a global fence on the device `devID`.
    pub fence: Option<unsafe extern "C" fn(u32)>,
    /// Reserved.
    pub padding: [*const c_void; 31],
}

const _: () = {
    assert!(std::mem::size_of::<DeviceInfo>() == 8);
    assert!(std::mem::size_of::<SpaceHandle>() == 64);
    assert!(std::mem::align_of::<SpaceHandle>() == 1);
    assert!(std::mem::size_of::<ToolSettings>() == 256);
    assert!(std::mem::size_of::<ToolProgrammingInterface>() == 256);
};
