//! Image formats the tool returns, and reading an image's pixel size from its header, so the
//! reported size is the size of the bytes sent, not of what was asked for.

/// An image format Chromium can encode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    /// Lossless PNG (the default).
    Png,
    /// JPEG, smaller for photos and long pages.
    Jpeg,
}

impl Format {
    /// The name used in arguments, results and DevTools.
    pub fn name(self) -> &'static str {
        match self {
            Format::Png => "png",
            Format::Jpeg => "jpeg",
        }
    }

    /// The MIME type of the image content.
    pub fn mime(self) -> &'static str {
        match self {
            Format::Png => "image/png",
            Format::Jpeg => "image/jpeg",
        }
    }

    /// Parses an argument value.
    pub fn from_name(s: &str) -> Option<Format> {
        match s {
            "png" => Some(Format::Png),
            "jpeg" => Some(Format::Jpeg),
            _ => None,
        }
    }
}

use super::error::ImageError;

const PNG_SIGNATURE: &[u8] = b"\x89PNG\r\n\x1a\n";

/// Width and height of a PNG or JPEG image.
pub(crate) fn dimensions(format: Format, bytes: &[u8]) -> Result<(u32, u32), ImageError> {
    match format {
        Format::Png => png_dimensions(bytes),
        Format::Jpeg => jpeg_dimensions(bytes),
    }
}

fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

fn png_dimensions(b: &[u8]) -> Result<(u32, u32), ImageError> {
    // Signature, then the IHDR chunk: length (13), "IHDR", width, height.
    if b.len() < 24 || !b.starts_with(PNG_SIGNATURE) || &b[12..16] != b"IHDR" {
        return Err(ImageError::WrongFormat {
            format: "PNG",
            len: b.len(),
        });
    }
    let (w, h) = (be32(&b[16..20]), be32(&b[20..24]));
    if w == 0 || h == 0 {
        return Err(ImageError::NoPixels {
            format: "PNG",
            width: w,
            height: h,
        });
    }
    Ok((w, h))
}

fn jpeg_dimensions(b: &[u8]) -> Result<(u32, u32), ImageError> {
    if !b.starts_with(&[0xFF, 0xD8]) {
        return Err(ImageError::WrongFormat {
            format: "JPEG",
            len: b.len(),
        });
    }
    let mut i = 2;
    while i + 4 <= b.len() {
        if b[i] != 0xFF {
            return Err(ImageError::JpegMarker { offset: i });
        }
        let marker = b[i + 1];
        if marker == 0xFF {
            i += 1; // fill byte
            continue;
        }
        if (0xD0..=0xD9).contains(&marker) || marker == 0x01 {
            i += 2; // markers without a length
            continue;
        }
        let len = usize::from(u16::from_be_bytes([b[i + 2], b[i + 3]]));
        let is_sof = (0xC0..=0xCF).contains(&marker) && !matches!(marker, 0xC4 | 0xC8 | 0xCC);
        if is_sof {
            if i + 9 > b.len() {
                break;
            }
            let h = u32::from(u16::from_be_bytes([b[i + 5], b[i + 6]]));
            let w = u32::from(u16::from_be_bytes([b[i + 7], b[i + 8]]));
            if w == 0 || h == 0 {
                return Err(ImageError::NoPixels {
                    format: "JPEG",
                    width: w,
                    height: h,
                });
            }
            return Ok((w, h));
        }
        i += 2 + len;
    }
    Err(ImageError::NoJpegFrame { len: b.len() })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn png(w: u32, h: u32) -> Vec<u8> {
        let mut v = PNG_SIGNATURE.to_vec();
        v.extend_from_slice(&13u32.to_be_bytes());
        v.extend_from_slice(b"IHDR");
        v.extend_from_slice(&w.to_be_bytes());
        v.extend_from_slice(&h.to_be_bytes());
        v.extend_from_slice(&[8, 6, 0, 0, 0]);
        v
    }

    fn jpeg(w: u16, h: u16) -> Vec<u8> {
        let mut v = vec![0xFF, 0xD8];
        v.extend_from_slice(&[0xFF, 0xE0, 0x00, 0x04, 0xAA, 0xBB]); // APP0, 2 bytes of data
        v.extend_from_slice(&[0xFF, 0xC0, 0x00, 0x11, 0x08]);
        v.extend_from_slice(&h.to_be_bytes());
        v.extend_from_slice(&w.to_be_bytes());
        v.extend_from_slice(&[0x03; 12]);
        v
    }

    #[test]
    fn sizes() {
        let check = |format: Format, bytes: Vec<u8>, want: Result<(u32, u32), &str>| {
            let got = dimensions(format, &bytes).map_err(|e| e.to_string());
            assert_eq!(got, want.map_err(str::to_owned), "{format:?}");
        };
        check(Format::Png, png(1000, 3000), Ok((1000, 3000)));
        check(Format::Png, png(1, 1), Ok((1, 1)));
        check(Format::Png, png(0, 5), Err("a PNG image of 0x5 pixels"));
        check(
            Format::Png,
            b"GIF89a................".to_vec(),
            Err("not a PNG image"),
        );
        check(Format::Jpeg, jpeg(1280, 800), Ok((1280, 800)));
        check(
            Format::Jpeg,
            jpeg(0, 800),
            Err("a JPEG image of 0x800 pixels"),
        );
        check(
            Format::Jpeg,
            jpeg(1280, 800)[..12].to_vec(),
            Err("no frame header in the JPEG image"),
        );
        check(
            Format::Jpeg,
            [&[0xFF, 0xD8, 0x00][..], &[0; 8]].concat(),
            Err("a JPEG marker was expected at byte 2"),
        );
        check(Format::Jpeg, png(3, 3), Err("not a JPEG image"));
    }

    #[test]
    fn names() {
        for f in [Format::Png, Format::Jpeg] {
            assert_eq!(Format::from_name(f.name()), Some(f));
            assert!(f.mime().ends_with(f.name()));
        }
        assert_eq!(Format::from_name("gif"), None);
    }
}
