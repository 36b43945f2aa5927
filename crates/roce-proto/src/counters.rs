//! Counters of the RC transport, named after the NVIDIA mlx5 and Linux rxe counters users already
//! know, plus packet/byte counts and one drop counter per reason a frame is discarded.
//!
//! Plain `u64` fields, `serde::Serialize` for JSON; nothing here decides anything.

use serde::Serialize;

/// A struct of `u64` counters and its `accumulate`, which adds every field: the field list is
/// written once, so no counter can be left out of a sum.
macro_rules! summed_counters {
    (
        $(#[$meta:meta])*
        pub struct $ty:ident {
            $($(#[doc = $doc:literal])* $name:ident,)*
        }
    ) => {
        $(#[$meta])*
        pub struct $ty {
            $($(#[doc = $doc])* pub $name: u64,)*
        }

        impl $ty {
            /// Adds every counter of `o` into `self`.
            pub fn accumulate(&mut self, o: &$ty) {
                $(self.$name += o.$name;)*
            }
        }
    };
}

summed_counters! {
    /// Counters of one queue pair (requester, responder and completer together).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
    pub struct QpCounters {
        /// Packets sent (requests, responses, ACKs).
        tx_packets,
        /// Bytes of frames sent.
        tx_bytes,
        /// Packets accepted for this QP.
        rx_packets,
        /// Bytes of frames accepted for this QP.
        rx_bytes,
        /// Request packets sent again (go-back-N).
        retransmitted_packets,
        /// ACK packets sent.
        acks_sent,
        /// NAK packets sent (sequence, invalid request, access, operational).
        naks_sent,
        /// Responder: request packets received with a PSN beyond the expected one (mlx5).
        out_of_sequence,
        /// Requester: NAK-sequence-error packets received (mlx5); under selective repeat they
        /// are `selective_naks`.
        packet_seq_err,
        /// Responder: duplicate request packets received (mlx5, rxe).
        duplicate_request,
        /// Requester: local ACK timeouts that fired (mlx5).
        local_ack_timeout_err,
        /// Requester: ACKs or READ responses whose PSN skipped an expected READ/atomic response
        /// (mlx5).
        implied_nak_seq_err,
        /// Requester: RNR NAKs received while the RNR retry limit was not exceeded (mlx5).
        rnr_nak_retry_err,
        /// Requester: RNR retries exhausted (rxe `retry_rnr_exceeded_err`).
        retry_rnr_exceeded_err,
        /// Responder: RNR NAKs sent because no receive was posted (rxe `send_rnr_err`).
        send_rnr_err,
        /// Requester: NAK remote access error received (mlx5).
        req_remote_access_errors,
        /// Requester: NAK invalid request received (mlx5).
        req_remote_invalid_request,
        /// Responder: requests refused for rkey, bounds or rights (mlx5).
        resp_remote_access_errors,
        /// Responder: requests refused as invalid (opcode sequence, length, alignment).
        resp_invalid_request,
        /// Responder: receives too small for an incoming SEND (mlx5 `resp_local_length_error`).
        resp_local_length_error,
        /// Requester: transport retries exhausted (mlx5).
        req_transport_retries_exceeded,
        /// Requester: retransmission rounds started (rxe `completer_retry_err`).
        completer_retry_err,
        /// Responder: RDMA WRITE requests executed (mlx5).
        rx_write_requests,
        /// Responder: RDMA READ requests executed (mlx5).
        rx_read_requests,
        /// Responder: atomic requests executed (mlx5).
        rx_atomic_requests,
        /// Responder: SEND messages completed.
        rx_send_requests,
        /// Packets that reached the QP but were dropped (bad state, bad opcode for RC, stale
        /// response, malformed response).
        rx_dropped,
        /// CE-marked packets received (for the notification point).
        ecn_ce_received,
        /// CNPs received for this QP and handed to its reaction point, whether or not they changed
        /// the rate (mlx5 `rp_cnp_handled`; the controller's own count of CNPs that cut the rate is
        /// `cc::CcMetrics::cnp_rate_cuts`).
        rp_cnp_handled,
        /// Work completions with an error status.
        error_completions,
        /// Responder: responses not queued because the queue was full (the request packet is also
        /// counted in `rx_dropped`; roce's own).
        resp_queue_full,
        /// Responder, selective repeat: request packets placed ahead of the expected PSN (each is
        /// also an `out_of_sequence`; roce's own).
        out_of_order_placed,
        /// Requester, selective repeat: sequence NAKs received, each naming a packet the
        /// responder holds (roce's own; go-back-N's are `packet_seq_err`).
        selective_naks,
    }
}

impl QpCounters {
    /// NAKs the requester received: sequence errors (selective ones too), RNR, remote access
    /// and invalid request.
    pub fn naks_received(&self) -> u64 {
        naks(
            self.packet_seq_err + self.selective_naks,
            self.rnr_nak_retry_err,
            self.req_remote_access_errors,
            self.req_remote_invalid_request,
        )
    }
}

/// The NAKs a requester received, from its four NAK counters (one sum for both counter sets).
fn naks(seq_err: u64, rnr_retry_err: u64, remote_access: u64, invalid_request: u64) -> u64 {
    seq_err + rnr_retry_err + remote_access + invalid_request
}

/// Frames the endpoint discarded before any QP saw them, by reason.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct DropCounters {
    /// Not a RoCEv2 frame (not IP/UDP 4791), or truncated / inconsistent lengths.
    pub malformed: u64,
    /// ICRC mismatch.
    pub bad_icrc: u64,
    /// IPv4 header checksum mismatch.
    pub bad_ip_checksum: u64,
    /// Unsupported BTH version or opcode.
    pub bad_header: u64,
    /// Destination MAC or IP is not this endpoint's.
    pub wrong_destination: u64,
    /// P_Key does not match.
    pub bad_pkey: u64,
    /// No QP with the destination QPN.
    pub unknown_qp: u64,
    /// The destination QP was retired (`Endpoint::retire_qp`): a stale CNP, ACK or duplicate
    /// after its flow ended. Not in `rx_dropped`, which counts what the traffic lost.
    pub retired_qp: u64,
    /// The source address is not the QP's peer.
    pub wrong_source: u64,
    /// The QP's state does not accept packets.
    pub bad_state: u64,
    /// Not an RC opcode.
    pub not_rc: u64,
}

/// Counters of a whole endpoint.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct EndpointCounters {
    /// Frames handed to `handle_frame`.
    pub rx_frames: u64,
    /// Bytes handed to `handle_frame`.
    pub rx_bytes: u64,
    /// Frames produced by `poll_transmit`.
    pub tx_frames: u64,
    /// Bytes produced by `poll_transmit`.
    pub tx_bytes: u64,
    /// CNPs sent.
    pub cnps_sent: u64,
    /// Discards before QP dispatch.
    pub drops: DropCounters,
    /// The sum over the endpoint's QPs.
    pub qp: QpCounters,
}

// ---------------------------------------------------------------------------------------------
// What a user reads: counters under the names `rdma statistic` prints, per port and per QP, and
// the one table formatter every command shares (`roce stats`, `--stats`, `roce demo`'s report).

/// `RdmaCounters` and its `of_qp`: each counter is declared beside the QP counter it reads (or 0
/// where a QP has none), so the mapping cannot miss one.
macro_rules! rdma_counters {
    (of_qp($q:ident) { $($(#[doc = $doc:literal])* $name:ident: $src:expr,)* }) => {
        summed_counters! {
            /// Counters under the names `rdma statistic show` prints for mlx5 and rxe devices (and
            /// a few of this crate's own, marked so), for one port, one QP or a sum of them.
            #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
            #[serde(default)]
            pub struct RdmaCounters {
                $($(#[doc = $doc])* $name,)*
            }
        }

        impl RdmaCounters {
            /// The counters of one QP (the notification point's and the port's frame counts
            /// stay 0).
            pub fn of_qp($q: &QpCounters) -> Self {
                RdmaCounters {
                    $($name: $src,)*
                }
            }

            /// Every counter as `(name, value)`, in a fixed order.
            pub fn pairs(&self) -> Vec<(&'static str, u64)> {
                vec![$((stringify!($name), self.$name),)*]
            }
        }
    };
}

rdma_counters! {
    of_qp(q) {
        /// Frames sent (rxe `sent_pkts`).
        sent_pkts: q.tx_packets,
        /// Frames received (rxe `rcvd_pkts`).
        rcvd_pkts: q.rx_packets,
        /// CE-marked RoCEv2 packets received (notification point).
        np_ecn_marked_roce_packets: q.ecn_ce_received,
        /// CNPs sent (notification point; per port only).
        np_cnp_sent: 0,
        /// CNPs handled by the reaction point.
        rp_cnp_handled: q.rp_cnp_handled,
        /// CNPs the congestion controller absorbed without a rate change.
        rp_cnp_ignored: 0,
        /// Responder: request packets beyond the expected PSN.
        out_of_sequence: q.out_of_sequence,
        /// Requester: NAK sequence errors received.
        packet_seq_err: q.packet_seq_err,
        /// Responder: duplicate requests received.
        duplicate_request: q.duplicate_request,
        /// Requester: ACK timeouts.
        local_ack_timeout_err: q.local_ack_timeout_err,
        /// Requester: responses that implied a lost READ/atomic response.
        implied_nak_seq_err: q.implied_nak_seq_err,
        /// Requester: RNR NAKs received.
        rnr_nak_retry_err: q.rnr_nak_retry_err,
        /// Requester: RNR retries exhausted (rxe).
        retry_rnr_exceeded_err: q.retry_rnr_exceeded_err,
        /// Responder: RNR NAKs sent (rxe).
        send_rnr_err: q.send_rnr_err,
        /// Requester: transport retries exhausted.
        req_transport_retries_exceeded: q.req_transport_retries_exceeded,
        /// Requester: NAK remote access error received.
        req_remote_access_errors: q.req_remote_access_errors,
        /// Requester: NAK invalid request received.
        req_remote_invalid_request: q.req_remote_invalid_request,
        /// Responder: requests refused for rkey, bounds or rights.
        resp_remote_access_errors: q.resp_remote_access_errors,
        /// Responder: receives too small for an incoming SEND.
        resp_local_length_error: q.resp_local_length_error,
        /// Requester: retransmission rounds (rxe).
        completer_retry_err: q.completer_retry_err,
        /// Request packets sent again (roce's own).
        retransmitted_packets: q.retransmitted_packets,
        /// Responder, selective repeat: packets placed ahead of the expected PSN (roce's own).
        out_of_order_placed: q.out_of_order_placed,
        /// Requester, selective repeat: NAKs naming a packet the responder holds (roce's own).
        selective_naks: q.selective_naks,
        /// Responder: RDMA WRITE requests executed.
        rx_write_requests: q.rx_write_requests,
        /// Responder: RDMA READ requests executed.
        rx_read_requests: q.rx_read_requests,
        /// Responder: atomic requests executed.
        rx_atomic_requests: q.rx_atomic_requests,
        /// Responder: SEND messages received (roce's own).
        rx_send_requests: q.rx_send_requests,
        /// Work completions with an error status (roce's own; mlx5 splits it into
        /// req/resp_cqe_error).
        error_completions: q.error_completions,
        /// Frames dropped for a bad ICRC (roce's own).
        rx_icrc_errors: 0,
        /// Frames dropped for any other reason before or at the QP (roce's own).
        rx_dropped: q.rx_dropped,
    }
}

impl RdmaCounters {
    /// The counters of one port: its endpoint's, with the sum over its QPs. Like mlx5,
    /// `np_ecn_marked_roce_packets` counts every CE-marked RoCEv2 packet the port's QPs took
    /// (requests and responses; at least what the notification point saw).
    pub fn of_port(c: &EndpointCounters, np: &crate::ecn::NpCounters) -> Self {
        let d = &c.drops;
        RdmaCounters {
            sent_pkts: c.tx_frames,
            rcvd_pkts: c.rx_frames,
            np_ecn_marked_roce_packets: np.np_ecn_marked_roce_packets.max(c.qp.ecn_ce_received),
            np_cnp_sent: c.cnps_sent,
            rx_icrc_errors: d.bad_icrc,
            rx_dropped: c.qp.rx_dropped
                + d.malformed
                + d.bad_ip_checksum
                + d.bad_header
                + d.wrong_destination
                + d.bad_pkey
                + d.unknown_qp
                + d.wrong_source
                + d.bad_state
                + d.not_rc,
            ..RdmaCounters::of_qp(&c.qp)
        }
    }

    /// NAKs the requester received: [`QpCounters::naks_received`] of the same counters.
    pub fn naks_received(&self) -> u64 {
        naks(
            self.packet_seq_err + self.selective_naks,
            self.rnr_nak_retry_err,
            self.req_remote_access_errors,
            self.req_remote_invalid_request,
        )
    }

    /// Transport errors: completions in error, exhausted retries, remote access errors.
    pub fn transport_errors(&self) -> u64 {
        self.error_completions + self.req_transport_retries_exceeded + self.req_remote_access_errors
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_qp_and_its_rdma_counters_count_the_same_naks_received() {
        let q = QpCounters {
            packet_seq_err: 1,
            rnr_nak_retry_err: 20,
            req_remote_access_errors: 300,
            req_remote_invalid_request: 4000,
            selective_naks: 50_000,
            // NAKs sent and other errors are not NAKs received.
            naks_sent: 800_000,
            out_of_sequence: 600_000,
            resp_remote_access_errors: 7_000_000,
            ..QpCounters::default()
        };
        assert_eq!(q.naks_received(), 54_321);
        assert_eq!(RdmaCounters::of_qp(&q).naks_received(), 54_321);
    }
}
