//! The fabric's shape: which node is a host or a switch, which ports the
//! links join, and how a switch picks the egress port for a packet (the
//! host's own port, an uplink by ECMP 5-tuple hash, or per-packet spraying).
//! Nodes are numbered hosts first (`0..hosts`), then switches.

/// The shape of the fabric.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Topology {
    /// Every host on one switch.
    Star {
        /// Hosts on the switch.
        hosts: usize,
    },
    /// `leaves` top-of-rack switches with `hosts_per_leaf` hosts each, every
    /// leaf linked to each of `spines` spine switches.
    LeafSpine {
        /// Top-of-rack switches.
        leaves: usize,
        /// Hosts under each leaf.
        hosts_per_leaf: usize,
        /// Spine switches (each leaf has one uplink to each).
        spines: usize,
    },
}

impl Topology {
    /// Number of hosts.
    pub fn hosts(&self) -> usize {
        match *self {
            Topology::Star { hosts } => hosts,
            Topology::LeafSpine {
                leaves,
                hosts_per_leaf,
                ..
            } => leaves * hosts_per_leaf,
        }
    }

    /// Hosts that share a top-of-rack switch (all of them in a star).
    pub fn hosts_per_leaf(&self) -> usize {
        match *self {
            Topology::Star { hosts } => hosts,
            Topology::LeafSpine { hosts_per_leaf, .. } => hosts_per_leaf,
        }
    }

    /// Number of switches.
    pub fn switches(&self) -> usize {
        match *self {
            Topology::Star { .. } => 1,
            Topology::LeafSpine { leaves, spines, .. } => leaves + spines,
        }
    }

    /// Links between switches and hosts or switches, each counted once.
    pub fn links(&self) -> usize {
        match *self {
            Topology::Star { hosts } => hosts,
            Topology::LeafSpine {
                leaves,
                hosts_per_leaf,
                spines,
            } => leaves * (hosts_per_leaf + spines),
        }
    }

    /// The leaf (top-of-rack switch index, 0-based among leaves) of `host`.
    pub fn leaf_of(&self, host: usize) -> usize {
        host / self.hosts_per_leaf().max(1)
    }

    /// Checks sizes: at least two hosts, at least one spine, under 65,536
    /// hosts (addresses are 10.1.x.y).
    pub fn validate(&self) -> Result<(), String> {
        let hosts = self.hosts();
        if hosts < 2 {
            return Err(format!("a fabric needs at least 2 hosts, got {hosts}"));
        }
        if hosts > 65_535 {
            return Err(format!("at most 65,535 hosts, got {hosts}"));
        }
        if let Topology::LeafSpine {
            spines,
            hosts_per_leaf,
            ..
        } = *self
        {
            if spines == 0 || hosts_per_leaf == 0 {
                return Err(
                    "a leaf-spine fabric needs at least one spine and one host per leaf".into(),
                );
            }
        }
        Ok(())
    }
}

/// Where a switch port leads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Peer {
    /// Host `h`'s NIC.
    Host(usize),
    /// Port `port` of switch `switch` (switch index, not node index).
    Switch { switch: usize, port: usize },
}

/// One switch's ports and routing role.
#[derive(Clone, Debug)]
pub(super) struct SwitchShape {
    /// Where each port leads.
    pub ports: Vec<Peer>,
    pub role: Role,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Role {
    /// A star's only switch: port `h` leads to host `h`.
    Star,
    /// Leaf `leaf`: ports `0..hosts_per_leaf` lead to its hosts, then one
    /// uplink per spine.
    Leaf { leaf: usize },
    /// A spine: port `l` leads to leaf `l`.
    Spine,
}

/// The switches of `t`, with every port's peer, and for each host the
/// (switch, port) its NIC is cabled to.
pub(super) fn build(t: &Topology) -> (Vec<SwitchShape>, Vec<(usize, usize)>) {
    match *t {
        Topology::Star { hosts } => {
            let ports = (0..hosts).map(Peer::Host).collect();
            let sw = SwitchShape {
                ports,
                role: Role::Star,
            };
            (vec![sw], (0..hosts).map(|h| (0, h)).collect())
        }
        Topology::LeafSpine {
            leaves,
            hosts_per_leaf,
            spines,
        } => {
            let mut out = Vec::with_capacity(leaves + spines);
            for leaf in 0..leaves {
                let mut ports: Vec<Peer> = (0..hosts_per_leaf)
                    .map(|i| Peer::Host(leaf * hosts_per_leaf + i))
                    .collect();
                ports.extend((0..spines).map(|s| Peer::Switch {
                    switch: leaves + s,
                    port: leaf,
                }));
                out.push(SwitchShape {
                    ports,
                    role: Role::Leaf { leaf },
                });
            }
            for s in 0..spines {
                let ports = (0..leaves)
                    .map(|leaf| Peer::Switch {
                        switch: leaf,
                        port: hosts_per_leaf + s,
                    })
                    .collect();
                out.push(SwitchShape {
                    ports,
                    role: Role::Spine,
                });
            }
            let nics = (0..leaves * hosts_per_leaf)
                .map(|h| (h / hosts_per_leaf, h % hosts_per_leaf))
                .collect();
            (out, nics)
        }
    }
}

/// The egress port of a switch with `role` for a packet to host `dst`:
/// `Ok(port)` when only one port leads there, `Err((first, n))` when any of
/// the `n` uplinks from `first` on does (the caller picks by hash or spray).
pub(super) fn route(
    role: Role,
    hosts_per_leaf: usize,
    uplinks: usize,
    dst: usize,
) -> Result<usize, (usize, usize)> {
    match role {
        Role::Star => Ok(dst),
        Role::Spine => Ok(dst / hosts_per_leaf),
        Role::Leaf { leaf } => {
            if dst / hosts_per_leaf == leaf {
                Ok(dst % hosts_per_leaf)
            } else {
                Err((hosts_per_leaf, uplinks))
            }
        }
    }
}

/// The ECMP hash of a frame's 5-tuple (IPv4 addresses at bytes 26..34,
/// UDP ports at 34..38); 0 for a frame too short to have them.
pub(super) fn flow_hash(frame: &[u8]) -> u64 {
    match frame.get(26..38) {
        Some(b) => ecmp_hash(b),
        None => 0,
    }
}

/// A 5-tuple hash for ECMP (FNV-1a over the addresses and ports as they
/// are on the wire, then the protocol, UDP; then a final mix), so every
/// packet of a flow takes the same uplink. Runs once per frame sent: a
/// plain loop over the 12 bytes (an iterator chain over the fields cost
/// about a tenth of a fabric run's instructions).
fn ecmp_hash(addrs_and_ports: &[u8]) -> u64 {
    const PRIME: u64 = 0x0100_0000_01b3;
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in addrs_and_ports {
        h = (h ^ b as u64).wrapping_mul(PRIME);
    }
    h = (h ^ 17).wrapping_mul(PRIME);
    h ^= h >> 29;
    h = h.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h ^ (h >> 32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leaf_spine_ports_pair_up() {
        let t = Topology::LeafSpine {
            leaves: 3,
            hosts_per_leaf: 4,
            spines: 2,
        };
        let (sw, nics) = build(&t);
        assert_eq!(sw.len(), 5);
        assert_eq!(nics.len(), 12);
        assert_eq!(nics[5], (1, 1));
        // Every switch-to-switch port's peer points back at it.
        for (i, s) in sw.iter().enumerate() {
            for (p, peer) in s.ports.iter().enumerate() {
                if let Peer::Switch { switch, port } = *peer {
                    assert_eq!(sw[switch].ports[port], Peer::Switch { switch: i, port: p });
                }
            }
        }
        assert_eq!(t.links(), 3 * (4 + 2));
    }

    #[test]
    fn routes_go_down_locally_and_up_otherwise() {
        let leaf1 = Role::Leaf { leaf: 1 };
        assert_eq!(route(leaf1, 4, 2, 5), Ok(1));
        assert_eq!(route(leaf1, 4, 2, 0), Err((4, 2)));
        assert_eq!(route(Role::Spine, 4, 2, 9), Ok(2));
        assert_eq!(route(Role::Star, 4, 0, 3), Ok(3));
    }

    /// The 5-tuple's bytes as on the wire.
    fn tuple(src: u32, dst: u32, sport: u16, dport: u16) -> Vec<u8> {
        [
            &src.to_be_bytes()[..],
            &dst.to_be_bytes(),
            &sport.to_be_bytes(),
            &dport.to_be_bytes(),
        ]
        .concat()
    }

    #[test]
    fn ecmp_hash_golden() {
        // Fixed values: every result in docs/ depends on which uplink a
        // flow hashes to.
        assert_eq!(
            ecmp_hash(&tuple(0x0a01_0003, 0x0a01_0105, 31850, 31850)),
            0xa98f_512a_0d91_6ad9
        );
        assert_eq!(ecmp_hash(&tuple(7, 9, 1, 2)), 0x569d_d4d4_bab3_baef);
        let mut frame = vec![0u8; 38];
        frame[26..38].copy_from_slice(&tuple(7, 9, 1, 2));
        assert_eq!(flow_hash(&frame), 0x569d_d4d4_bab3_baef);
        assert_eq!(flow_hash(&frame[..37]), 0, "too short for the ports");
    }

    #[test]
    fn ecmp_hash_spreads() {
        let mut seen = [0u32; 4];
        for s in 0..400u32 {
            seen[(ecmp_hash(&tuple(s, 7, 31850, 31850)) % 4) as usize] += 1;
        }
        assert!(seen.iter().all(|&n| n > 60), "{seen:?}");
    }
}
