//! The compressed REGISTER_BROKER body (name-server reference §2.3): a zlib stream of
//! length-prefixed parts. Only a broker with `compressedRegister=true` sends it.

use std::io::Read;

use flate2::read::ZlibDecoder;
use remoting::route::{BodyError, DataVersion, TopicConfigData, TopicConfigWrapper};

/// The most a compressed body may inflate to: a bound on memory, far above any real broker's
/// topic table (100,000 topics take about 6 MB).
const MAX_INFLATED: u64 = 64 * 1024 * 1024;

const WHAT: &str = "compressed RegisterBrokerBody";

fn err(reason: impl Into<String>) -> BodyError {
    BodyError {
        what: WHAT,
        reason: reason.into(),
    }
}

/// Inflates and parses the body: the DataVersion, the topic lines and the filter-server list
/// (the 5.x static-topic tail is ignored).
pub fn decode(body: &[u8]) -> Result<TopicConfigWrapper, BodyError> {
    let mut data = Vec::new();
    ZlibDecoder::new(body)
        .take(MAX_INFLATED + 1)
        .read_to_end(&mut data)
        .map_err(|e| err(format!("not a zlib stream: {e}")))?;
    if data.len() as u64 > MAX_INFLATED {
        return Err(err(format!("inflates to more than {MAX_INFLATED} bytes")));
    }
    let mut cur = &data[..];
    let version_json = part(&mut cur, "dataVersion")?;
    let data_version: DataVersion = remoting::fastjson::from_slice(version_json)
        .map_err(|e| err(format!("dataVersion: {e}")))?;
    let count = int(&mut cur, "topic count")?;
    if count < 0 || count as usize > cur.len() / 4 {
        return Err(err(format!("topic count {count} does not fit the body")));
    }
    let mut wrapper = TopicConfigWrapper {
        data_version,
        ..Default::default()
    };
    for i in 0..count {
        let line = part(&mut cur, "topic line")?;
        let line = std::str::from_utf8(line).map_err(|_| err(format!("topic {i}: not UTF-8")))?;
        let tc = topic_line(line).ok_or_else(|| err(format!("topic {i}: bad line {line:?}")))?;
        wrapper.topic_config_table.insert(tc.topic_name.clone(), tc);
    }
    Ok(wrapper)
}

/// `TopicConfig.decode`: `name read write perm filterType [attributes]`.
fn topic_line(line: &str) -> Option<TopicConfigData> {
    let mut it = line.split(' ');
    let name = it.next().filter(|n| !n.is_empty())?;
    let read = it.next()?.parse().ok()?;
    let write = it.next()?.parse().ok()?;
    let perm = it.next()?.parse().ok()?;
    let filter = it.next()?;
    Some(TopicConfigData {
        topic_name: name.to_owned(),
        read_queue_nums: read,
        write_queue_nums: write,
        perm,
        topic_filter_type: filter.to_owned(),
        ..Default::default()
    })
}

fn int(cur: &mut &[u8], what: &str) -> Result<i32, BodyError> {
    if cur.len() < 4 {
        return Err(err(format!("truncated before {what}")));
    }
    let v = i32::from_be_bytes([cur[0], cur[1], cur[2], cur[3]]);
    *cur = &cur[4..];
    Ok(v)
}

fn part<'a>(cur: &mut &'a [u8], what: &str) -> Result<&'a [u8], BodyError> {
    let len = int(cur, what)?;
    if len < 0 || len as usize > cur.len() {
        return Err(err(format!("{what} length {len} exceeds the body")));
    }
    let (p, rest) = cur.split_at(len as usize);
    *cur = rest;
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// What `RegisterBrokerBody.encode(true)` writes for two topics (4.9).
    pub fn java_like(topics: &[&str]) -> Vec<u8> {
        let mut raw = Vec::new();
        let mut put = |b: &[u8]| {
            raw.extend_from_slice(&(b.len() as i32).to_be_bytes());
            raw.extend_from_slice(b);
        };
        put(br#"{"counter":3,"timestamp":1700000000000}"#);
        let mut tail = Vec::new();
        for t in topics {
            let line = format!("{t} 4 4 6 SINGLE_TAG");
            tail.extend_from_slice(&(line.len() as i32).to_be_bytes());
            tail.extend_from_slice(line.as_bytes());
        }
        raw.extend_from_slice(&(topics.len() as i32).to_be_bytes());
        raw.extend_from_slice(&tail);
        raw.extend_from_slice(&2i32.to_be_bytes());
        raw.extend_from_slice(b"[]");
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
        z.write_all(&raw).unwrap();
        z.finish().unwrap()
    }

    #[test]
    fn java_compressed_body_is_read() {
        let w = decode(&java_like(&["TopicA", "TBW102"])).unwrap();
        assert_eq!(w.data_version.counter, 3);
        assert_eq!(w.topic_config_table["TopicA"].write_queue_nums, 4);
        assert_eq!(w.topic_config_table["TBW102"].perm, 6);
        assert!(decode(b"not zlib").is_err());
        let mut bad = java_like(&["T"]);
        bad.truncate(bad.len() / 2);
        assert!(decode(&bad).is_err());
    }
}
