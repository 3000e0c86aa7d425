//! How every binary of the workspace ends: one rule for its exit status,
//! told apart by the error's type, never by its message
//! (docs/output.md, "Exit codes and interruption"):
//!
//! - **0**: the run finished and nothing failed;
//! - **1**: the run failed (a port that did not come up, a child that
//!   died, a request that failed or came back wrong);
//! - **2**: the invocation was refused before anything ran: clap's own
//!   usage errors, and after parsing a configuration the file, `--set` or
//!   a shortcut got wrong ([`ConfigError`], the engine's [`KeyError`]) or
//!   a flag value the command refuses ([`UsageError`]: `--cores 0`, a plot
//!   not named `.svg`, an output folder that does not exist);
//! - **128 + N**: signal N stopped the run (SIGINT 130, SIGTERM 143), after
//!   the command reported what had finished, marked `"interrupted": true`.
//!   A signal wins over the run's own verdict: what was cut short is not
//!   a failure of the run.
//!
//! SIGINT and SIGTERM reach the stop flag the run loops and `rpc-bench`'s
//! child waits poll ([`crate::run::sys::interrupted`]); this module also
//! records which of the two came, for the status ([`install_interrupt`]).
//! A stdout whose reader went away (`rpc-bench man | head -1`) is not an
//! error ([`crate::report::output::Stdout`]; an error that still carries a
//! broken pipe ends quietly too).

use crate::config::{ConfigError, KeyError};
use crate::run::waiting::Interrupted;
use std::process::ExitCode;

/// The run failed.
pub const FAILURE: u8 = 1;
/// The invocation was refused (clap's code for a usage error).
pub const USAGE: u8 = 2;

/// A flag value (or a combination of flags) a command refuses after clap
/// parsed it; exits [`USAGE`] as clap's own refusals do. The message names
/// the flag.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// [`UsageError`] as the `anyhow::Error` the commands return.
pub fn usage(msg: impl Into<String>) -> anyhow::Error {
    UsageError(msg.into()).into()
}

/// Routes SIGINT and SIGTERM to the stop flag ([`interrupted`]), which
/// also records which came, for [`interrupt_status`]. Once per process;
/// call it before anything starts that a signal should stop rather than
/// kill.
pub fn install_interrupt() {
    crate::run::sys::install_interrupt_flag();
}

/// Whether SIGINT or SIGTERM arrived: finish what is running, report what
/// finished, then exit with [`interrupt_status`].
pub fn interrupted() -> bool {
    crate::run::sys::interrupted()
}

/// 128 + the signal that stopped the run (130 for SIGINT, 143 for
/// SIGTERM), or `None` when no signal came.
pub fn interrupt_status() -> Option<u8> {
    crate::run::sys::interrupt_signal().map(|sig| 128u8.saturating_add(sig as u8))
}

/// The status of a command that ended with `e`: [`USAGE`] when the chain
/// holds a configuration or usage refusal, else [`FAILURE`].
pub fn error_status(e: &anyhow::Error) -> u8 {
    let refused = e
        .chain()
        .any(|c| c.is::<ConfigError>() || c.is::<KeyError>() || c.is::<UsageError>());
    if refused {
        USAGE
    } else {
        FAILURE
    }
}

/// Whether `e` is our stdout's reader going away (a broken pipe): not a
/// failure of the command, and nothing to tell anyone.
pub fn is_closed_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// The end of `main` for `tool`: prints the error (`tool: error: ...`) if
/// there is one, and returns the status of the rule above: a signal's
/// 128 + N first, then 2 or 1 for an error, else 0.
pub fn finish(tool: &str, result: anyhow::Result<()>) -> ExitCode {
    let status = match &result {
        Ok(()) => 0,
        Err(e) if is_closed_pipe(e) => 0,
        Err(e) if e.downcast_ref::<Interrupted>().is_some() => {
            // Stopped while waiting for its peer: not an error, a signal.
            eprintln!("{tool}: {e}");
            FAILURE
        }
        Err(e) => {
            eprintln!("{tool}: error: {e:#}");
            error_status(e)
        }
    };
    ExitCode::from(interrupt_status().unwrap_or(status))
}

/// The end of `main` for a run that completed with failures its report
/// already names: [`FAILURE`], or the signal's status if one stopped it.
pub fn failed() -> ExitCode {
    ExitCode::from(interrupt_status().unwrap_or(FAILURE))
}

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::Context;

    #[test]
    fn refusals_are_usage_errors_by_type_through_context() {
        let config: anyhow::Error = ConfigError::UnknownKey {
            key: "link.colour".into(),
            expected: "a [link] key".into(),
        }
        .into();
        assert_eq!(error_status(&config.context("the lossy regime")), USAGE);
        let key: anyhow::Error = KeyError::new("transport.rto_us", "too small").into();
        assert_eq!(error_status(&key), USAGE);
        let flag = Err::<(), _>(usage("--cores needs two cores"))
            .context("floor")
            .unwrap_err();
        assert_eq!(error_status(&flag), USAGE);
        // A message that reads like a config error is still a run failure.
        let run = anyhow::anyhow!("invalid config: rpc-client exited with 1");
        assert_eq!(error_status(&run), FAILURE);
    }

    #[test]
    fn a_closed_pipe_is_told_apart_from_other_io_errors() {
        let pipe = std::io::Error::from(std::io::ErrorKind::BrokenPipe);
        let e = anyhow::Error::from(pipe).context("cannot write the man page");
        assert!(is_closed_pipe(&e));
        let full = std::io::Error::from(std::io::ErrorKind::PermissionDenied);
        assert!(!is_closed_pipe(&anyhow::Error::from(full)));
        assert_eq!(interrupt_status(), None, "no signal in a unit test");
    }
}
