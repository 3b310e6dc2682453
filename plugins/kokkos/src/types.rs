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

/// `Kokkos_Tools_VariableInfo_ValueUnion`: one value of a tuning variable, read
/// as the variable's declared type says.
#[repr(C)]
#[derive(Clone, Copy)]
pub union ValueUnion {
    /// `kokkos_value_int64`.
    pub int_value: i64,
    /// `kokkos_value_double`.
    pub double_value: f64,
    /// `kokkos_value_string`: NUL-terminated unless all 64 bytes are used.
    pub string_value: [c_char; 64],
}

/// `Kokkos_Tools_VariableInfo_ValueUnionSet`: the array of a candidate set.
#[repr(C)]
#[derive(Clone, Copy)]
pub union ValueUnionSet {
    /// int64 candidates.
    pub int_value: *mut i64,
    /// double candidates.
    pub double_value: *mut f64,
    /// string candidates, 64 bytes each.
    pub string_value: *mut [c_char; 64],
}

/// `Kokkos_Tools_ValueSet`: a discrete set of candidates.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ValueSet {
    /// Candidates in `values`.
    pub size: usize,
    /// The candidates.
    pub values: ValueUnionSet,
}

/// `Kokkos_Tools_ValueRange`: candidates from `lower` to `upper` by `step` (0: any
/// value between), each bound excluded when open. C `bool`s taken as bytes.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ValueRange {
    /// Lower bound.
    pub lower: ValueUnion,
    /// Upper bound.
    pub upper: ValueUnion,
    /// Step (0: continuous).
    pub step: ValueUnion,
    /// The lower bound is excluded.
    pub open_lower: u8,
    /// The upper bound is excluded.
    pub open_upper: u8,
}

/// `Kokkos_Tools_VariableInfo_SetOrRange`, as `VariableInfo::value_quantity` says.
#[repr(C)]
#[derive(Clone, Copy)]
pub union SetOrRange {
    /// `kokkos_value_set`.
    pub set: ValueSet,
    /// `kokkos_value_range`.
    pub range: ValueRange,
}

/// `Kokkos_Tools_VariableInfo`: how a tuning variable is typed and what values it
/// may take.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct VariableInfo {
    /// `Kokkos_Tools_VariableInfo_ValueType` (double 0, int64 1, string 2).
    pub value_type: u32,
    /// `Kokkos_Tools_VariableInfo_StatisticalCategory` (categorical 0, ordinal 1,
    /// interval 2, ratio 3).
    pub category: u32,
    /// `Kokkos_Tools_VariableInfo_CandidateValueType` (set 0, range 1, unbounded 2).
    pub value_quantity: u32,
    /// The candidates (200 bytes).
    pub candidates: SetOrRange,
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
    /// The value, typed as the variable's declaration says.
    pub value: ValueUnion,
    /// The variable's declaration (set by Kokkos; not relied upon).
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
    assert!(std::mem::size_of::<ValueUnion>() == 64);
    assert!(std::mem::size_of::<ValueSet>() == 16);
    assert!(std::mem::offset_of!(ValueSet, values) == 8);
    assert!(std::mem::size_of::<ValueRange>() == 200);
    assert!(std::mem::offset_of!(ValueRange, upper) == 64);
    assert!(std::mem::offset_of!(ValueRange, step) == 128);
    assert!(std::mem::offset_of!(ValueRange, open_lower) == 192);
    assert!(std::mem::offset_of!(ValueRange, open_upper) == 193);
    assert!(std::mem::size_of::<SetOrRange>() == 200);
    assert!(std::mem::offset_of!(VariableInfo, value_quantity) == 8);
    assert!(std::mem::offset_of!(OptimizationGoal, goal) == 8);
};

const _: () = {
    assert!(std::mem::size_of::<DeviceInfo>() == 8);
    assert!(std::mem::size_of::<SpaceHandle>() == 64);
    assert!(std::mem::align_of::<SpaceHandle>() == 1);
    assert!(std::mem::size_of::<ToolSettings>() == 256);
    assert!(std::mem::size_of::<ToolProgrammingInterface>() == 256);
};
