//! What pgoforge's exit status means, the same for every subcommand, and the errors that carry a
//! status other than the general failure. A script driving pgoforge (a CI job, a packager's
//! build) branches on these:
//!
//! | status | meaning |
//! |---|---|
//! | 0 | success |
//! | 1 | anything else went wrong: a build, a server, a tool, a file (the message says what) |
//! | 2 | usage: the command line, a recipe or a path it names was refused before work started |
//! | 3 | the correctness gate stopped a variant (different checksums, or a regression test) |
//! | 4 | no variant measurably beat the baseline: the run finished, nothing was packaged |
//! | 5 | the host was too noisy to benchmark (per-second throughput too erratic; `--allow-noisy`) |
//! | 6 | a package failed verification (`package verify`: hashes, version, deployment files, start) |
//! | 7 | the source could not be fetched: the mirror does not serve it (404), did not answer, or served a file whose checksum differs |
//! | 8 | the package was compiled for a CPU level this machine lacks (`package verify`, and the package's own `cpu-check`) |
//! | 9 | provenance: a package's files match its SHA256SUMS but its binary or a profile does not match its manifest, a profile is missing, or a rebuild sidecar belongs to another package (`package verify`, `rebuild`; the message names the file) |
//! | 10 | `rebuild` refused: this machine's compiler, linker or BOLT is not the one the package was built with (`--allow-toolchain-change`) |
//! | 11 | `rebuild` finished and the rebuilt binary differs from the package's (the differing sections are listed) |
//! | 75 | the machine was too busy to benchmark (EX_TEMPFAIL: rerun when it is quiet) |

/// An exit status with a meaning (the table above).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExitStatus {
    Success,
    Failure,
    Usage,
    GateStopped,
    NoWinner,
    Noisy,
    /// `package verify` found the package damaged, altered or not starting.
    VerifyFailed,
    /// The mirror did not serve the source (missing files, no answer, a checksum that differs).
    SourceUnavailable,
    /// The package needs CPU features this machine (or the `--cpu-flags` stand-in) lacks.
    CpuUnsupported,
    /// A binary or profile does not match its manifest, or a sidecar is another package's.
    Provenance,
    /// `rebuild` refused another toolchain than the package's.
    ToolchainDiffers,
    /// `rebuild` made another binary than the package's.
    NotReproduced,
    Busy,
}

impl ExitStatus {
    pub const fn code(self) -> i32 {
        match self {
            ExitStatus::Success => 0,
            ExitStatus::Failure => 1,
            ExitStatus::Usage => 2,
            ExitStatus::GateStopped => 3,
            ExitStatus::NoWinner => 4,
            ExitStatus::Noisy => 5,
            ExitStatus::VerifyFailed => 6,
            ExitStatus::SourceUnavailable => 7,
            ExitStatus::CpuUnsupported => 8,
            ExitStatus::Provenance => 9,
            ExitStatus::ToolchainDiffers => 10,
            ExitStatus::NotReproduced => 11,
            ExitStatus::Busy => 75,
        }
    }
}

/// Failures whose callers (and scripts) branch on the kind; everything else is an
/// [`anyhow::Error`] and exits with [`ExitStatus::Failure`].
#[derive(Debug, thiserror::Error)]
pub enum Stop {
    /// Input refused before any work started.
    #[error("{0}")]
    Usage(String),
    /// The correctness gate found a variant computing differently from the baseline.
    #[error("{message}")]
    GateStopped {
        variants: Vec<String>,
        message: String,
    },
    /// The machine stayed busy for longer than the benchmark was willing to wait.
    #[error("{message}")]
    Busy { share: f64, message: String },
    /// The host's own noise (per-second throughput within a run) was too large to measure on.
    #[error("{message}")]
    Noisy { cv: f64, message: String },
    /// The source could not be fetched (the message names the release and the file).
    #[error("{0}")]
    SourceUnavailable(String),
    /// A package's files, its manifest and its rebuild sidecar disagree (the message names the
    /// file).
    #[error("{0}")]
    Provenance(String),
    /// The rebuild's toolchain is not the package's (the message names both versions).
    #[error("{0}")]
    ToolchainDiffers(String),
}

impl Stop {
    pub fn status(&self) -> ExitStatus {
        match self {
            Stop::Usage(_) => ExitStatus::Usage,
            Stop::GateStopped { .. } => ExitStatus::GateStopped,
            Stop::Busy { .. } => ExitStatus::Busy,
            Stop::Noisy { .. } => ExitStatus::Noisy,
            Stop::SourceUnavailable(_) => ExitStatus::SourceUnavailable,
            Stop::Provenance(_) => ExitStatus::Provenance,
            Stop::ToolchainDiffers(_) => ExitStatus::ToolchainDiffers,
        }
    }
}

/// Refuses input: `usage!("--rounds must be at least 1")` returns a [`Stop::Usage`] error.
#[macro_export]
macro_rules! usage {
    ($($arg:tt)*) => {
        return Err($crate::infra::exit::Stop::Usage(format!($($arg)*)).into())
    };
}

/// Marks the errors of input checking as [`Stop::Usage`]: `Compiler::find(name).refused()?`. An
/// error that already has a kind keeps it.
pub trait Refuse<T> {
    fn refused(self) -> anyhow::Result<T>;
}

impl<T, E: Into<anyhow::Error>> Refuse<T> for Result<T, E> {
    fn refused(self) -> anyhow::Result<T> {
        self.map_err(|e| {
            let e: anyhow::Error = e.into();
            if e.chain().any(|c| c.downcast_ref::<Stop>().is_some()) {
                e
            } else {
                Stop::Usage(format!("{e:#}")).into()
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_status_has_its_own_code() {
        let all = [
            ExitStatus::Success,
            ExitStatus::Failure,
            ExitStatus::Usage,
            ExitStatus::GateStopped,
            ExitStatus::NoWinner,
            ExitStatus::Noisy,
            ExitStatus::VerifyFailed,
            ExitStatus::SourceUnavailable,
            ExitStatus::CpuUnsupported,
            ExitStatus::Provenance,
            ExitStatus::ToolchainDiffers,
            ExitStatus::NotReproduced,
            ExitStatus::Busy,
        ];
        let codes: std::collections::BTreeSet<i32> = all.iter().map(|s| s.code()).collect();
        assert_eq!(codes.len(), all.len());
        // 2 is also clap's status for a command line it cannot parse: one meaning either way.
        assert_eq!(ExitStatus::Usage.code(), 2);
    }
}
