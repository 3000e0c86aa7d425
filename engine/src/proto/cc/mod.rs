//! Placeholder (being written): congestion control.

/// Which rate control client sessions run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CcKind {
    /// No rate control: credits alone.
    #[default]
    None,
    /// Timely (RTT gradient), eRPC's parameters.
    Timely,
    /// DCQCN (ECN marks, CNPs), the paper's parameters.
    Dcqcn,
}
