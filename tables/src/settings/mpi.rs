//! The MPI plugin's settings (`libkprof_mpi.so`).

use super::setting::{Group, Kind, Setting};

/// How long rank 0 waits for a rank's profile at `MPI_Finalize`.
pub const MPI_WAIT_S: Setting = Setting {
    name: "mpi-wait-s",
    var: "KPROF_MPI_WAIT_S",
    run_flag: false,
    kind: Kind::Seconds,
    meta: "S",
    default: "10",
    doc:
        "seconds the job's reduction at MPI_Finalize waits for a peer before it goes on without it",
};

/// The MPI plugin's settings.
pub const GROUP: Group = Group {
    part: "mpi",
    settings: &[MPI_WAIT_S],
};
