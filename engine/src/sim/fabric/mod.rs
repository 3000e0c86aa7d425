//! The fabric lab: a deterministic virtual-time datacenter fabric whose
//! hosts run the engine's own endpoints.

pub mod topology;
