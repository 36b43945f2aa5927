//! Work requests the RC and congestion-control tests post, built in one place.

use roce_proto::mr::MrInfo;
use roce_proto::verbs::{SendWr, Sge, WrOpcode};

/// Send request `wr_id`: `opcode` over `len` bytes at `offset` into `mr`.
pub fn send_wr(wr_id: u64, opcode: WrOpcode, mr: &MrInfo, offset: u64, len: u32) -> SendWr {
    let sge = Sge {
        addr: mr.addr + offset,
        length: len,
        lkey: mr.lkey,
    };
    SendWr::new(wr_id, opcode, sge)
}

/// An RDMA WRITE (`wr_id`) of the first `len` bytes of `src` to the start of `dst`.
pub fn write_wr(wr_id: u64, src: &MrInfo, dst: &MrInfo, len: u32) -> SendWr {
    let opcode = WrOpcode::RdmaWrite {
        remote_addr: dst.addr,
        rkey: dst.rkey,
    };
    send_wr(wr_id, opcode, src, 0, len)
}
