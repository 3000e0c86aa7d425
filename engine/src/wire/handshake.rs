//! Builders of the handshake's session-management bodies, for the peers
//! and tools that write them by hand.

use super::rpc::{SmRepr, SmStatus, SmType, SESSION_NONE};

impl SmRepr {
    /// A ConnectReq body: client session `client_session` asking for
    /// `credits`, with its `mtu` and request window.
    pub const fn connect_req(client_session: u16, credits: u16, mtu: u16, req_window: u16) -> Self {
        SmRepr {
            sm_type: SmType::ConnectReq,
            status: SmStatus::Ok,
            client_session,
            server_session: SESSION_NONE,
            credits,
            mtu,
            req_window,
            server_token: 0,
        }
    }
}
