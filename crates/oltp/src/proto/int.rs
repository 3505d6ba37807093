//! Little-endian integers read out of a packet's payload; a read past the end gives 0 (the caller
//! checks lengths where a short packet matters). Below both `packet` and `error`, which use them.

pub fn get_u16(buf: &[u8], pos: usize) -> u16 {
    buf.get(pos..pos + 2)
        .map_or(0, |b| u16::from_le_bytes([b[0], b[1]]))
}

pub fn get_u32(buf: &[u8], pos: usize) -> u32 {
    buf.get(pos..pos + 4)
        .map_or(0, |b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}
