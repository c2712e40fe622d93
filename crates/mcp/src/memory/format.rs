//! The bytes of an index file (see [`super::store`]): the tokenized notes
//! of one memory root, with the vocabulary their term ids point into. Not
//! their texts: a note taken from the file is read for its snippet when it
//! ranks among the results (`Doc::text`), so loading stays a few bytes per
//! term of a note.
//!
//! Little-endian, length-prefixed:
//!
//! ```text
//! "cbmemidx" | version u32 | body length u64 | checksum u64 | body
//! body: layout kind u8 | root | agent | term count u32 | terms |
//!       note count u32 | notes
//! note: name | size u64 | inode u64 | mtime i64 u32 | ctime i64 u32 |
//!       read at i64 (ns) | length u32 |
//!       n u32 | n × (term u32, count u32) | n u32 | n × name term u32 |
//!       n u32 | n × heading term u32
//! string: byte length u32 | UTF-8 bytes
//! ```
//!
//! Decoding trusts nothing: every count is checked against the bytes left
//! before anything is allocated, every term id against the vocabulary,
//! every list for order, the checksum over the whole body; any mismatch,
//! another version or another root is [`Corrupt`], and the caller reads
//! the notes instead. The checksum catches a torn or damaged file, not a
//! forger (who would need to write our state directory, see `store`).

use std::sync::{Arc, OnceLock};

use super::index::{Cache, Doc, Vocabulary, date_in_name, note_stem};
use super::walk::Stamp;

const MAGIC: &[u8; 8] = b"cbmemidx";
/// Bumped whenever the layout or the meaning of a field changes (the
/// tokenizer or what a note's terms are included): older files are then
/// ignored and rebuilt.
pub const VERSION: u32 = 1;
const HEADER_BYTES: usize = 8 + 4 + 8 + 8;
/// Longest note name kept (a walk's names are far shorter).
const MAX_NAME_BYTES: usize = 4096;

/// Whose notes a file holds; a file of another root or agent is not used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// 0 for a workspace, 1 for a memory directory.
    pub kind: u8,
    /// The canonical memory root, as bytes.
    pub root: Vec<u8>,
    pub agent: String,
}

/// A decoded file: the vocabulary, the notes by name, and sorted by name.
pub type Decoded = (Vocabulary, Cache, Vec<Arc<Doc>>);

/// Why an index file was not used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unusable memory index file: {0}")]
pub struct Corrupt(pub &'static str);

/// The file's bytes for `docs`, sorted by name (their term ids index
/// `vocabulary`). Only
/// the terms the notes use are written, renumbered in their order, so ids
/// of removed notes' terms do not pile up from one process to the next.
pub fn encode(identity: &Identity, vocabulary: &[Arc<str>], docs: &[Arc<Doc>]) -> Vec<u8> {
    let mut used = vec![false; vocabulary.len()];
    for doc in docs {
        for id in (doc.term_counts.iter().map(|&(id, _)| id))
            .chain(doc.name_terms.iter().copied())
            .chain(doc.heading_terms.iter().copied())
        {
            if let Some(slot) = used.get_mut(id as usize) {
                *slot = true;
            }
        }
    }
    // Monotonic: lists sorted by old id stay sorted by new id.
    let mut renumbered = vec![u32::MAX; vocabulary.len()];
    let mut next = 0u32;
    let mut body = Vec::new();
    body.push(identity.kind);
    put_bytes(&mut body, &identity.root);
    put_bytes(&mut body, identity.agent.as_bytes());
    let count_at = body.len();
    put_u32(&mut body, 0);
    for (id, term) in vocabulary.iter().enumerate() {
        if used[id] {
            renumbered[id] = next;
            next += 1;
            put_bytes(&mut body, term.as_bytes());
        }
    }
    body[count_at..count_at + 4].copy_from_slice(&next.to_le_bytes());
    let new_id = |id: u32| renumbered.get(id as usize).copied().unwrap_or(u32::MAX);
    put_u32(&mut body, len_u32(docs.len()));
    for doc in docs {
        put_bytes(&mut body, doc.name.as_bytes());
        let stamp = &doc.stamp;
        put_u64(&mut body, stamp.size);
        put_u64(&mut body, stamp.inode);
        put_time(&mut body, stamp.modified);
        put_time(&mut body, stamp.changed);
        put_u64(&mut body, i64::try_from(doc.read_at).unwrap_or(0) as u64);
        put_u32(&mut body, doc.length);
        put_u32(&mut body, len_u32(doc.term_counts.len()));
        for &(id, count) in &doc.term_counts {
            put_u32(&mut body, new_id(id));
            put_u32(&mut body, count);
        }
        for list in [&doc.name_terms, &doc.heading_terms] {
            put_u32(&mut body, len_u32(list.len()));
            for &id in list {
                put_u32(&mut body, new_id(id));
            }
        }
    }
    let mut out = Vec::with_capacity(HEADER_BYTES + body.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.extend_from_slice(&(body.len() as u64).to_le_bytes());
    out.extend_from_slice(&checksum(&body, 0).to_le_bytes());
    out.extend_from_slice(&body);
    out
}

/// The notes of a file written by [`encode`] for `expected`: the
/// vocabulary, the notes by name, and the same notes sorted by name.
pub fn decode(bytes: &[u8], expected: &Identity) -> Result<Decoded, Corrupt> {
    let mut header = Reader(bytes);
    if header.take(8)? != MAGIC {
        return Err(Corrupt("not an index file"));
    }
    if header.u32()? != VERSION {
        return Err(Corrupt("another format version"));
    }
    let length = header.u64()?;
    let sum = header.u64()?;
    let body = header.0;
    if body.len() as u64 != length {
        return Err(Corrupt("truncated or extended"));
    }
    if checksum(body, 0) != sum {
        return Err(Corrupt("checksum mismatch"));
    }
    let mut r = Reader(body);
    let identity = Identity {
        kind: r.u8()?,
        root: r.bytes()?.to_vec(),
        agent: r.string()?.to_owned(),
    };
    if identity != *expected {
        return Err(Corrupt("written for another memory root or agent"));
    }
    let term_count = r.count(4)?;
    let mut terms: Vec<Arc<str>> = Vec::with_capacity(term_count);
    for _ in 0..term_count {
        let term = r.string()?;
        if term.is_empty() {
            return Err(Corrupt("an empty term"));
        }
        terms.push(Arc::from(term));
    }
    let vocabulary = Vocabulary::from_terms(terms).ok_or(Corrupt("a repeated term"))?;
    let known = u32::try_from(vocabulary.len()).map_err(|_| Corrupt("too many terms"))?;
    // The smallest note: its fixed fields and four empty lengths.
    let doc_count = r.count(4 + 8 + 8 + 12 + 12 + 8 + 4 + 12)?;
    let mut docs = Cache::with_capacity(doc_count);
    let mut by_name: Vec<Arc<Doc>> = Vec::with_capacity(doc_count);
    for _ in 0..doc_count {
        let doc = Arc::new(read_doc(&mut r, known)?);
        if by_name.last().is_some_and(|last| last.name >= doc.name) {
            return Err(Corrupt("notes out of order or repeated"));
        }
        docs.insert(doc.name.clone(), (Arc::clone(&doc), 0));
        by_name.push(doc);
    }
    if !r.0.is_empty() {
        return Err(Corrupt("bytes after the last note"));
    }
    Ok((vocabulary, docs, by_name))
}

fn read_doc(r: &mut Reader<'_>, known: u32) -> Result<Doc, Corrupt> {
    let name = r.string()?;
    if name.is_empty() || name.len() > MAX_NAME_BYTES || name.contains('\0') {
        return Err(Corrupt("a bad note name"));
    }
    let stamp = Stamp {
        size: r.u64()?,
        inode: r.u64()?,
        modified: r.time()?,
        changed: r.time()?,
    };
    let read_at = i128::from(r.u64()? as i64);
    let length = r.u32()?;
    let pairs = r.count(8)?;
    let mut term_counts = Vec::with_capacity(pairs);
    let mut total = 0u64;
    for _ in 0..pairs {
        let (id, count) = (r.u32()?, r.u32()?);
        if id >= known || count == 0 || term_counts.last().is_some_and(|&(last, _)| last >= id) {
            return Err(Corrupt("bad term counts"));
        }
        total += u64::from(count);
        term_counts.push((id, count));
    }
    if total != u64::from(length) {
        return Err(Corrupt("a note length that is not its term count"));
    }
    let name_terms = r.ids(known)?;
    let heading_terms = r.ids(known)?;
    // Heading terms are terms of the text.
    if heading_terms
        .iter()
        .any(|id| term_counts.binary_search_by_key(id, |&(t, _)| t).is_err())
    {
        return Err(Corrupt("a heading term not in the text"));
    }
    Ok(Doc {
        day: date_in_name(note_stem(name)),
        name: name.to_owned(),
        text: OnceLock::new(),
        term_counts,
        length,
        name_terms,
        heading_terms,
        stamp,
        read_at,
    })
}

/// A cheap 64-bit checksum (four multiply-rotate lanes over 8-byte
/// words): enough to see a torn write or a flipped bit, fast enough to run
/// over every load. Also names the files, with two seeds (`store`).
pub fn checksum(bytes: &[u8], seed: u64) -> u64 {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    let mix = |lane: u64, word: u64| (lane ^ word).wrapping_mul(K).rotate_left(31);
    let mut lanes = [
        seed ^ 0x243F_6A88_85A3_08D3,
        seed ^ 0x1319_8A2E_0370_7344,
        seed ^ 0xA409_3822_299F_31D0,
        seed ^ 0x082E_FA98_EC4E_6C89,
    ];
    let word = |chunk: &[u8]| {
        let mut buffer = [0u8; 8];
        buffer[..chunk.len()].copy_from_slice(chunk);
        u64::from_le_bytes(buffer)
    };
    let mut blocks = bytes.chunks_exact(32);
    for block in &mut blocks {
        for (lane, chunk) in lanes.iter_mut().zip(block.chunks_exact(8)) {
            *lane = mix(*lane, word(chunk));
        }
    }
    for (lane, chunk) in lanes.iter_mut().zip(blocks.remainder().chunks(8)) {
        *lane = mix(*lane, word(chunk));
    }
    let mut hash = bytes.len() as u64;
    for lane in lanes {
        hash = mix(hash, lane);
    }
    hash ^ (hash >> 29)
}

fn len_u32(len: usize) -> u32 {
    u32::try_from(len).unwrap_or(u32::MAX)
}

fn put_u32(out: &mut Vec<u8>, value: u32) {
    out.extend_from_slice(&value.to_le_bytes());
}

fn put_u64(out: &mut Vec<u8>, value: u64) {
    out.extend_from_slice(&value.to_le_bytes());
}

fn put_time(out: &mut Vec<u8>, (secs, nanos): (i64, u32)) {
    put_u64(out, secs as u64);
    put_u32(out, nanos);
}

fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    put_u32(out, len_u32(bytes.len()));
    out.extend_from_slice(bytes);
}

/// The bytes not decoded yet.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], Corrupt> {
        if n > self.0.len() {
            return Err(Corrupt("truncated"));
        }
        let (taken, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(taken)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], Corrupt> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }

    fn u8(&mut self) -> Result<u8, Corrupt> {
        Ok(self.array::<1>()?[0])
    }

    fn u32(&mut self) -> Result<u32, Corrupt> {
        self.array().map(u32::from_le_bytes)
    }

    fn u64(&mut self) -> Result<u64, Corrupt> {
        self.array().map(u64::from_le_bytes)
    }

    fn time(&mut self) -> Result<(i64, u32), Corrupt> {
        Ok((self.u64()? as i64, self.u32()?))
    }

    /// A count of items of at least `min_bytes` each, no more than the
    /// bytes left could hold (so a hostile count allocates nothing).
    fn count(&mut self, min_bytes: usize) -> Result<usize, Corrupt> {
        let count = self.u32()? as usize;
        if count.saturating_mul(min_bytes) > self.0.len() {
            return Err(Corrupt("a count past the end"));
        }
        Ok(count)
    }

    fn bytes(&mut self) -> Result<&'a [u8], Corrupt> {
        let len = self.u32()? as usize;
        self.take(len)
    }

    fn string(&mut self) -> Result<&'a str, Corrupt> {
        std::str::from_utf8(self.bytes()?).map_err(|_| Corrupt("text that is not UTF-8"))
    }

    /// A strictly increasing list of term ids below `known`.
    fn ids(&mut self, known: u32) -> Result<Vec<u32>, Corrupt> {
        let count = self.count(4)?;
        let mut ids = Vec::with_capacity(count);
        for _ in 0..count {
            let id = self.u32()?;
            if id >= known || ids.last().is_some_and(|&last| last >= id) {
                return Err(Corrupt("bad term ids"));
            }
            ids.push(id);
        }
        Ok(ids)
    }
}

#[cfg(test)]
mod tests;
