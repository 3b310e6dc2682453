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

/// `Kokkos_Tools_VariableInfo`: how a tuning variable is typed and what values it
/// may take. kprof only passes it on; the candidates (a set or a range) are kept as
/// opaque words.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct VariableInfo {
    /// `Kokkos_Tools_VariableInfo_ValueType` (double 0, int64 1, string 2).
    pub value_type: u32,
    /// `Kokkos_Tools_VariableInfo_StatisticalCategory`.
    pub category: u32,
    /// `Kokkos_Tools_VariableInfo_CandidateValueType` (set 0, range 1, unbounded 2).
    pub value_quantity: u32,
    /// `Kokkos_Tools_VariableInfo_SetOrRange` (200 bytes).
    pub candidates: [u64; 25],
    /// For the tool that declared it.
    pub tool_provided_info: *mut c_void,
}

/// `Kokkos_Tools_VariableValue`: one tuning variable's value, passed by value to
/// `kokkosp_end_context`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct VariableValue {
    /// The variable's id (from its declaration).
    pub type_id: usize,
    /// `Kokkos_Tools_VariableInfo_ValueUnion`: int64, double or 64 chars.
    pub value: [u64; 8],
    /// The variable's declaration.
    pub metadata: *mut VariableInfo,
}

/// `Kokkos_Tools_OptimizationGoal`, passed by value.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct OptimizationGoal {
    /// The variable to optimize.
    pub type_id: usize,
    /// `Kokkos_Tools_OptimizationType` (minimize 0, maximize 1).
    pub goal: u32,
}

const _: () = {
    assert!(std::mem::size_of::<VariableInfo>() == 224);
    assert!(std::mem::align_of::<VariableInfo>() == 8);
    assert!(std::mem::offset_of!(VariableInfo, candidates) == 16);
    assert!(std::mem::offset_of!(VariableInfo, tool_provided_info) == 216);
    assert!(std::mem::size_of::<VariableValue>() == 80);
    assert!(std::mem::offset_of!(VariableValue, value) == 8);
    assert!(std::mem::offset_of!(VariableValue, metadata) == 72);
    assert!(std::mem::size_of::<OptimizationGoal>() == 16);
    assert!(std::mem::offset_of!(OptimizationGoal, goal) == 8);
};

const _: () = {
    assert!(std::mem::size_of::<DeviceInfo>() == 8);
    assert!(std::mem::size_of::<SpaceHandle>() == 64);
    assert!(std::mem::align_of::<SpaceHandle>() == 1);
    assert!(std::mem::size_of::<ToolSettings>() == 256);
    assert!(std::mem::size_of::<ToolProgrammingInterface>() == 256);
};
