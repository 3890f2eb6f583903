//! Target `mcp251xfd_format`: the MCP251xFD SPI command format, plain and
//! CRC, as the stack's regmap format (`wirespeed::regmap::format::Mcp251xfd`)
//! and the driver's encoders (`wirespeed_drivers::mcp251xfd::regio`).
//!
//! - Any bytes given to the device-side decoder are a request or a typed
//!   error, never a panic.
//! - Encode → decode round-trips the register, direction and (CRC form)
//!   the length, in bytes for SFRs and in words for message RAM.
//! - A read framed by the driver with a correct CRC passes `check_read`
//!   and returns its data; any single corrupted byte fails it.
//! - `encode_write` then `readdress_write` equals encoding at the new address.

use arbitrary::{Arbitrary, Unstructured};
use wirespeed::regmap::format::{Format, Mcp251xfd, Op, MCP251XFD_RAM_SIZE, MCP251XFD_RAM_START};
use wirespeed_drivers::mcp251xfd::regio;

#[derive(Arbitrary, Debug)]
struct Input<'a> {
    crc: bool,
    write: bool,
    addr: u16,
    data: &'a [u8],
    other_addr: u16,
    corrupt_at: u16,
    corrupt_xor: u8,
    raw: &'a [u8],
}

fn in_ram(reg: u32) -> bool {
    (MCP251XFD_RAM_START..MCP251XFD_RAM_START + MCP251XFD_RAM_SIZE).contains(&reg)
}

/// Runs one input.
pub fn run(data: &[u8]) {
    let Ok(input) = Input::arbitrary_take_rest(Unstructured::new(data)) else { return };
    let f = if input.crc { Mcp251xfd::crc() } else { Mcp251xfd::plain() };
    let op = if input.write { Op::Write } else { Op::Read };

    // Device side: any bytes.
    if let Ok(req) = f.decode_header(op, input.raw) {
        assert!(req.reg <= 0xFFF && req.header_len <= input.raw.len());
        assert_eq!(req.data_len.is_some(), input.crc);
    }

    // Round trip, within what one access may carry.
    let reg = u32::from(input.addr & 0xFFF);
    let max = f.max_data_bytes(reg).min(1020);
    let mut n = input.data.len().min(max);
    if in_ram(reg) || input.crc {
        n -= n % 4;
    }
    let payload = &input.data[..n];
    let header = f.header(op, reg, n);
    let mut frame = header.as_slice().to_vec();
    frame.extend_from_slice(payload);
    let req = f.decode_header(op, &frame).expect("a header the format made decodes");
    assert_eq!(req.reg, reg);
    assert_eq!(req.header_len, header.as_slice().len());
    if input.crc {
        assert_eq!(req.data_len, Some(n), "length field of {n} bytes at {reg:#x}");
    }
    let other = if input.write { Op::Read } else { Op::Write };
    assert!(f.decode_header(other, &frame).is_err(), "the other direction's instruction");

    // The driver's framing of the same access.
    let addr = reg as u16;
    let (h, t) = regio::overhead(input.crc);
    let mut buf = vec![0u8; h + n + t];
    if input.write {
        regio::encode_write(&mut buf, addr, payload, input.crc);
        assert_eq!(&buf[..h], header.as_slice());
        assert_eq!(&buf[h..h + n], payload);
        let new_addr = input.other_addr & 0xFFF;
        let mut expected = vec![0u8; buf.len()];
        regio::encode_write(&mut expected, new_addr, payload, input.crc);
        regio::readdress_write(&mut buf, new_addr, input.crc);
        assert_eq!(buf, expected, "readdressed write");
    } else {
        regio::encode_read(&mut buf, addr, n, input.crc);
        assert_eq!(&buf[..h], header.as_slice());
        // What a device answers: anything in the header's place, the data, its CRC.
        buf[h..h + n].copy_from_slice(payload);
        let trailer = f.trailer(header.as_slice(), payload);
        buf[h + n..].copy_from_slice(trailer.as_slice());
        assert_eq!(regio::check_read(&buf, addr, input.crc).expect("a correct read"), payload);
        if input.crc {
            let i = h + usize::from(input.corrupt_at) % (n + t);
            let xor = input.corrupt_xor.max(1);
            buf[i] ^= xor;
            assert!(regio::check_read(&buf, addr, true).is_err(), "byte {i} ^ {xor:#x} not detected");
        }
    }
}
