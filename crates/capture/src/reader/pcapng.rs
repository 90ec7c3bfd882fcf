//! The blocks of a pcapng file (sections, interface descriptions, the three packet blocks)
//! turned into interfaces and packets for the [`Decoder`], and the block headers read
//! before pcap-parser sees a block (its type and length, to skip a block it cannot use).
//!
//! Not the reading itself (buffers, refills, skipping: `file`), nor what a packet becomes
//! (`decoder`).

use std::collections::VecDeque;

use pcap_parser::pcapng::{Block, OptionCode};
use pcap_parser::traits::PcapNGPacketBlock;

use super::decoder::{Decoder, Interface, Resolution, INTERFACE_LIMIT};
use crate::types::Event;

pub(super) const PCAPNG_MAGIC: [u8; 4] = [0x0a, 0x0d, 0x0d, 0x0a];
pub(super) const PCAPNG_BOM: u32 = 0x1a2b_3c4d;
/// pcapng block types that carry a packet: obsolete Packet Block, Simple, Enhanced.
pub(super) const PB_TYPE: u32 = 2;
pub(super) const SPB_TYPE: u32 = 3;
pub(super) const EPB_TYPE: u32 = 6;

/// The type of the pcapng block at the start of `data`, in the section's byte order.
pub(super) fn ng_block_type(data: &[u8], big_endian: bool) -> Option<u32> {
    let b: [u8; 4] = data.get(..4)?.try_into().ok()?;
    Some(if big_endian {
        u32::from_be_bytes(b)
    } else {
        u32::from_le_bytes(b)
    })
}

/// The total length of the pcapng block at the start of `data`, when it is plausible (at
/// least 12, a multiple of 4). A section header says its own byte order; other blocks use
/// `big_endian` (None: only a section header is expected).
pub(super) fn ng_block_len(data: &[u8], big_endian: Option<bool>) -> Option<u32> {
    let raw: [u8; 4] = data.get(4..8)?.try_into().ok()?;
    let big_endian = if data.get(..4)? == PCAPNG_MAGIC {
        let bom: [u8; 4] = data.get(8..12)?.try_into().ok()?;
        if u32::from_le_bytes(bom) == PCAPNG_BOM {
            false
        } else if u32::from_be_bytes(bom) == PCAPNG_BOM {
            true
        } else {
            return None;
        }
    } else {
        big_endian?
    };
    let len = if big_endian {
        u32::from_be_bytes(raw)
    } else {
        u32::from_le_bytes(raw)
    };
    (len >= 12 && len % 4 == 0).then_some(len)
}

impl Decoder {
    pub(super) fn ng_block(&mut self, block: Block<'_>, queue: &mut VecDeque<Event>) {
        match block {
            Block::SectionHeader(shb) => {
                self.big_endian = shb.big_endian();
                self.interfaces.clear();
            }
            Block::InterfaceDescription(idb) => {
                let next_packet = self.stats.packets + 1;
                if self.interfaces.len() >= INTERFACE_LIMIT {
                    self.note(
                        queue,
                        next_packet,
                        format!("more than {INTERFACE_LIMIT} interfaces in one section: ignored"),
                    );
                    return;
                }
                let index = self.interfaces.len();
                let resolution = match Resolution::from_tsresol(idb.if_tsresol) {
                    Some(r) => r,
                    None => {
                        self.note(
                            queue,
                            next_packet,
                            format!(
                                "interface {index}: invalid timestamp resolution {:#04x}, microseconds assumed",
                                idb.if_tsresol
                            ),
                        );
                        Resolution::Pow10(6)
                    }
                };
                // if_tsoffset, read in the section's byte order.
                let offset_secs = idb
                    .options
                    .iter()
                    .filter(|o| o.code == OptionCode::IfTsoffset)
                    .find_map(|o| o.as_bytes().ok()?.get(..8)?.try_into().ok())
                    .map(|b: [u8; 8]| {
                        if self.big_endian {
                            i64::from_be_bytes(b)
                        } else {
                            i64::from_le_bytes(b)
                        }
                    })
                    .unwrap_or(0);
                self.interfaces.push(Interface {
                    linktype: u32::from(idb.linktype.0 as u16),
                    snaplen: idb.snaplen,
                    resolution,
                    offset_secs,
                    noted: false,
                });
            }
            Block::EnhancedPacket(epb) => {
                let ticks = (u64::from(epb.ts_high) << 32) | u64::from(epb.ts_low);
                let index = epb.if_id as usize;
                let time = match self.interfaces.get(index) {
                    Some(i) => i.resolution.time(ticks, i.offset_secs),
                    None => self.last_time,
                };
                self.packet(Some(index), time, epb.packet_data(), epb.origlen, queue);
            }
            Block::SimplePacket(spb) => {
                // No timestamp: the previous packet's time stands in.
                let mut data = spb.packet_data();
                if let Some(snaplen) = self.interfaces.first().map(|i| i.snaplen as usize) {
                    if snaplen > 0 && data.len() > snaplen {
                        data = &data[..snaplen];
                    }
                }
                self.packet(Some(0), self.last_time, data, spb.origlen, queue);
            }
            Block::Unknown(ub) => {
                let kind = if self.big_endian {
                    ub.block_type.swap_bytes()
                } else {
                    ub.block_type
                };
                if kind == PB_TYPE {
                    self.obsolete_packet(ub.data, queue);
                }
            }
            _ => {}
        }
    }

    /// The obsolete Packet Block (type 2): interface (u16), drops (u16), timestamp, captured
    /// and original lengths, data.
    fn obsolete_packet(&mut self, body: &[u8], queue: &mut VecDeque<Event>) {
        let u32_at = |at: usize| -> Option<u32> {
            let b: [u8; 4] = body.get(at..at + 4)?.try_into().ok()?;
            Some(if self.big_endian {
                u32::from_be_bytes(b)
            } else {
                u32::from_le_bytes(b)
            })
        };
        let fields = (|| {
            let b: [u8; 2] = body.get(..2)?.try_into().ok()?;
            let index = if self.big_endian {
                u16::from_be_bytes(b)
            } else {
                u16::from_le_bytes(b)
            };
            let ticks = (u64::from(u32_at(4)?) << 32) | u64::from(u32_at(8)?);
            let caplen = u32_at(12)? as usize;
            let origlen = u32_at(16)?;
            let data = body.get(20..20 + caplen)?;
            Some((usize::from(index), ticks, data, origlen))
        })();
        match fields {
            Some((index, ticks, data, origlen)) => {
                let time = match self.interfaces.get(index) {
                    Some(i) => i.resolution.time(ticks, i.offset_secs),
                    None => self.last_time,
                };
                self.packet(Some(index), time, data, origlen, queue);
            }
            None => {
                self.stats.packets += 1;
                let packet = self.stats.packets;
                self.note(queue, packet, "malformed pcapng packet block".into());
            }
        }
    }
}
