//! Every recording cut at every byte boundary (two chunks), and fed one
//! byte at a time, decodes to the same parts and report as whole (or, for
//! a recording of a cut stream, the same error).

use pai_providers::decode;

use crate::common::{decode_cut, recordings};

#[test]
fn every_two_chunk_split_decodes_the_same() {
    for (format, name, body) in recordings() {
        let whole = decode(format, &body);
        for cut in 0..=body.len() {
            let split = decode_cut(format, &body, &[cut]);
            assert_eq!(split, whole, "{}/{name} cut at {cut}", format.as_str());
        }
    }
}

#[test]
fn one_byte_chunks_decode_the_same() {
    for (format, name, body) in recordings() {
        let whole = decode(format, &body);
        let cuts: Vec<usize> = (1..body.len()).collect();
        let bytes = decode_cut(format, &body, &cuts);
        assert_eq!(
            bytes,
            whole,
            "{}/{name} in one-byte chunks",
            format.as_str()
        );
    }
}
