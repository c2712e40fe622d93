#![allow(clippy::unwrap_used)]

use super::*;

fn identity() -> Identity {
    Identity {
        kind: 0,
        root: b"/home/u/.openclaw/workspace".to_vec(),
        agent: "main".to_owned(),
    }
}

fn doc(name: &str, text: &str, term_counts: Vec<(u32, u32)>, headings: Vec<u32>) -> Arc<Doc> {
    Arc::new(Doc {
        name: name.to_owned(),
        text: OnceLock::from(Arc::<str>::from(text)),
        length: term_counts.iter().map(|&(_, count)| count).sum(),
        term_counts,
        name_terms: vec![4],
        heading_terms: headings,
        day: None,
        stamp: Stamp {
            size: text.len() as u64,
            inode: 77,
            modified: (1_700_000_000, 5),
            changed: (1_700_000_001, 6),
        },
        read_at: 1_800_000_000_000_000_000,
    })
}

/// A vocabulary with an unused term (id 1) and two notes, by name.
fn sample() -> (Vec<Arc<str>>, Vec<Arc<Doc>>) {
    let vocabulary: Vec<Arc<str>> = ["notes", "unused", "deploy", "staging", "2026"]
        .into_iter()
        .map(Arc::from)
        .collect();
    let docs = vec![
        doc("MEMORY.md", "deploy\n", vec![(2, 1)], vec![]),
        doc(
            "memory/2026-01-02.md",
            "# Notes\nstaging deploy deploy\n",
            vec![(0, 1), (2, 2), (3, 1)],
            vec![0],
        ),
    ];
    (vocabulary, docs)
}

fn terms_of(vocabulary: &Vocabulary, doc: &Doc) -> Vec<(String, u32)> {
    doc.term_counts
        .iter()
        .map(|&(id, count)| (vocabulary.terms()[id as usize].to_string(), count))
        .collect()
}

#[test]
fn round_trip_keeps_every_field_and_drops_unused_terms() {
    let (vocabulary, docs) = sample();
    let bytes = encode(&identity(), &vocabulary, &docs);
    let (decoded_vocabulary, decoded, by_name) = decode(&bytes, &identity()).unwrap();
    let names: Vec<&str> = by_name.iter().map(|doc| doc.name.as_str()).collect();
    assert_eq!(names, ["MEMORY.md", "memory/2026-01-02.md"]);
    assert_eq!(decoded_vocabulary.len(), 4, "the unused term is not kept");
    assert_eq!(decoded.len(), 2);
    let old = Vocabulary::from_terms(vocabulary).unwrap();
    for original in &docs {
        let (copy, _) = &decoded[&original.name];
        assert!(copy.text.get().is_none(), "texts are not kept");
        assert_eq!(copy.length, original.length);
        assert_eq!(copy.stamp, original.stamp);
        assert_eq!(copy.read_at, original.read_at);
        assert_eq!(
            terms_of(&decoded_vocabulary, copy),
            terms_of(&old, original)
        );
        let name = |v: &Vocabulary, ids: &[u32]| -> Vec<String> {
            ids.iter()
                .map(|&id| v.terms()[id as usize].to_string())
                .collect()
        };
        assert_eq!(
            name(&decoded_vocabulary, &copy.heading_terms),
            name(&old, &original.heading_terms)
        );
        assert_eq!(
            name(&decoded_vocabulary, &copy.name_terms),
            name(&old, &original.name_terms)
        );
    }
    // The day comes from the name, as when the note is read.
    assert_eq!(
        decoded["memory/2026-01-02.md"].0.day,
        date_in_name("2026-01-02")
    );
}

#[test]
fn every_truncation_and_every_flipped_byte_is_refused() {
    let (vocabulary, docs) = sample();
    let bytes = encode(&identity(), &vocabulary, &docs);
    for len in 0..bytes.len() {
        assert!(decode(&bytes[..len], &identity()).is_err(), "cut at {len}");
    }
    for at in 0..bytes.len() {
        let mut damaged = bytes.clone();
        damaged[at] ^= 0x10;
        assert!(decode(&damaged, &identity()).is_err(), "flipped at {at}");
    }
    let mut longer = bytes.clone();
    longer.push(0);
    assert!(decode(&longer, &identity()).is_err());
}

#[test]
fn another_version_root_or_agent_is_refused() {
    let (vocabulary, docs) = sample();
    let bytes = encode(&identity(), &vocabulary, &docs);
    let mut other_version = bytes.clone();
    other_version[8..12].copy_from_slice(&(VERSION + 1).to_le_bytes());
    assert_eq!(
        decode(&other_version, &identity()).unwrap_err(),
        Corrupt("another format version")
    );
    for other in [
        Identity {
            agent: "work".to_owned(),
            ..identity()
        },
        Identity {
            root: b"/elsewhere".to_vec(),
            ..identity()
        },
        Identity {
            kind: 1,
            ..identity()
        },
    ] {
        assert_eq!(
            decode(&bytes, &other).unwrap_err(),
            Corrupt("written for another memory root or agent")
        );
    }
}

/// A body with a valid header and checksum around it: what a hostile
/// writer could produce, so only the structural checks stand in the way.
fn sealed(body: &[u8]) -> Vec<u8> {
    let mut out = MAGIC.to_vec();
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.extend_from_slice(&(body.len() as u64).to_le_bytes());
    out.extend_from_slice(&checksum(body, 0).to_le_bytes());
    out.extend_from_slice(body);
    out
}

fn body_head(terms: &[&str]) -> Vec<u8> {
    let id = identity();
    let mut body = vec![id.kind];
    put_bytes(&mut body, &id.root);
    put_bytes(&mut body, id.agent.as_bytes());
    put_u32(&mut body, terms.len() as u32);
    for term in terms {
        put_bytes(&mut body, term.as_bytes());
    }
    body
}

/// One note whose term counts are `pairs` (length = their sum).
fn with_note(mut body: Vec<u8>, pairs: &[(u32, u32)], headings: &[u32]) -> Vec<u8> {
    put_u32(&mut body, 1);
    put_bytes(&mut body, b"a.md");
    body.extend_from_slice(&[0; 8 + 8 + 12 + 12 + 8]);
    put_u32(&mut body, pairs.iter().map(|&(_, count)| count).sum());
    put_u32(&mut body, pairs.len() as u32);
    for &(id, count) in pairs {
        put_u32(&mut body, id);
        put_u32(&mut body, count);
    }
    put_u32(&mut body, 0);
    put_u32(&mut body, headings.len() as u32);
    for &id in headings {
        put_u32(&mut body, id);
    }
    body
}

#[test]
fn hostile_contents_under_a_valid_checksum_are_refused() {
    // The sane one decodes: the checks below are what refuses the others.
    assert!(
        decode(
            &sealed(&with_note(body_head(&["a", "b"]), &[(0, 1), (1, 1)], &[0])),
            &identity()
        )
        .is_ok()
    );
    let cases: Vec<(Vec<u8>, &str)> = vec![
        // A count claiming billions of terms allocates nothing.
        (
            {
                let mut body = body_head(&[]);
                body.truncate(body.len() - 4);
                put_u32(&mut body, u32::MAX);
                body
            },
            "a count past the end",
        ),
        (
            with_note(body_head(&["a", "b"]), &[(0, 1), (9, 1)], &[]),
            "bad term counts",
        ),
        (
            with_note(body_head(&["a", "b"]), &[(1, 1), (0, 1)], &[]),
            "bad term counts",
        ),
        (
            with_note(body_head(&["a", "b"]), &[(0, 0)], &[]),
            "bad term counts",
        ),
        (
            with_note(body_head(&["a", "b"]), &[(0, 1)], &[1]),
            "a heading term not in the text",
        ),
        (
            with_note(body_head(&["a", "b"]), &[(0, 1)], &[7]),
            "bad term ids",
        ),
        (
            with_note(body_head(&["a", "a"]), &[(0, 1)], &[]),
            "a repeated term",
        ),
        (
            with_note(body_head(&["a", ""]), &[(0, 1)], &[]),
            "an empty term",
        ),
    ];
    for (body, why) in cases {
        assert_eq!(
            decode(&sealed(&body), &identity()).unwrap_err(),
            Corrupt(why)
        );
    }
    // A length that is not the sum of the counts.
    let mut body = with_note(body_head(&["a"]), &[(0, 2)], &[]);
    let at = body.len() - 4 - 8 - 4 - 4 - 4;
    body[at..at + 4].copy_from_slice(&5u32.to_le_bytes());
    assert_eq!(
        decode(&sealed(&body), &identity()).unwrap_err(),
        Corrupt("a note length that is not its term count")
    );
}

#[test]
fn the_checksum_sees_every_byte_and_the_length() {
    let data: Vec<u8> = (0..200u8).collect();
    let base = checksum(&data, 0);
    assert_ne!(checksum(&data, 1), base);
    for len in 0..data.len() {
        assert_ne!(checksum(&data[..len], 0), base, "{len}");
    }
    assert_ne!(checksum(&[0; 7], 0), checksum(&[0; 8], 0));
}
