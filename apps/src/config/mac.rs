//! A MAC address as the config file writes it (`aa:bb:cc:dd:ee:ff`).

use engine::wire::MacAddr;
use serde::{Deserialize, Serialize};
use std::str::FromStr;

/// A MAC address written `aa:bb:cc:dd:ee:ff` in the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mac(pub MacAddr);

impl Serialize for Mac {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for Mac {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        MacAddr::from_str(&s)
            .map(Mac)
            .map_err(|e| serde::de::Error::custom(format!("{s:?}: {e}")))
    }
}
