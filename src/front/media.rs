//! Media an execution returns: images, audio and binary embedded resources found in the
//! returned value (made in code by `image(...)`, or a downstream tool's content blocks passed
//! on) leave the value and reach the client as content blocks of their own, so that the model
//! sees an image as an image rather than as base64 text. Their payloads (the base64 data)
//! together may take at most `media_limit_bytes` (decoded); their other fields (a resource's
//! URI, MIME types, annotations, `_meta`), once through the personal-data checkpoint, at most
//! [`MediaLimits::fields_bytes`], which the reply budget then gives up for them. A block past
//! either, or whose data is not valid base64 of the kind it claims, stays out and is named in
//! the value instead. Text is the budget's (`budget`).

use base64::Engine;
use rmcp::model::ContentBlock;
use serde_json::{Map, Value};

use crate::content;

/// How deep in the returned value blocks are looked for (the value itself is depth 0: a block
/// returned alone, in an array, or in a downstream result's `content` array).
const MAX_DEPTH: usize = 4;
/// At most this many blocks leave one value; further ones stay in it.
const MAX_BLOCKS: usize = 16;
/// The longest MIME type a note in the value repeats.
const MAX_NOTED_MIME_BYTES: usize = 100;

/// What the media blocks of one reply may take.
#[derive(Debug, Clone, Copy)]
pub(super) struct MediaLimits {
    /// Their payloads, decoded.
    pub payload_bytes: usize,
    /// Their other fields, as compact JSON.
    pub fields_bytes: usize,
}

/// The media blocks taken out of a value, and the bytes of their fields but the payloads.
pub(super) struct TakenBlocks {
    pub blocks: Vec<ContentBlock>,
    pub fields_bytes: usize,
}

/// Takes the media blocks out of `value`, each replaced by a short note, within `limits`;
/// returns them in the order found, each passed through `prepare` (the personal-data
/// checkpoint) before it is weighed. `first_index` is the content index the first one will
/// have in the reply (after its text block).
pub(super) fn take_blocks(
    value: &mut Value,
    limits: MediaLimits,
    first_index: usize,
    prepare: &dyn Fn(&mut ContentBlock),
) -> TakenBlocks {
    let mut taken = Taken {
        blocks: Vec::new(),
        payload_bytes: 0,
        fields_bytes: 0,
        limits,
        first_index,
        prepare,
    };
    taken.visit(value, 0);
    TakenBlocks {
        blocks: taken.blocks,
        fields_bytes: taken.fields_bytes,
    }
}

struct Taken<'a> {
    blocks: Vec<ContentBlock>,
    payload_bytes: usize,
    fields_bytes: usize,
    limits: MediaLimits,
    first_index: usize,
    prepare: &'a dyn Fn(&mut ContentBlock),
}

impl Taken<'_> {
    fn visit(&mut self, value: &mut Value, depth: usize) {
        if self.blocks.len() >= MAX_BLOCKS {
            return;
        }
        if let Some(media) = Media::of(value) {
            *value = Value::String(self.take(media));
            return;
        }
        if depth >= MAX_DEPTH {
            return;
        }
        match value {
            Value::Array(items) => items.iter_mut().for_each(|v| self.visit(v, depth + 1)),
            Value::Object(map) => map.values_mut().for_each(|v| self.visit(v, depth + 1)),
            _ => {}
        }
    }

    /// Sends the block when it fits; the note that takes its place in the value.
    fn take(&mut self, media: Media) -> String {
        let Media {
            kind,
            mime_type,
            bytes,
            mut block,
        } = media;
        let mime_type = crate::text::prefix(&mime_type, MAX_NOTED_MIME_BYTES);
        if self.payload_bytes + bytes > self.limits.payload_bytes {
            return format!(
                "[{kind} {mime_type}, {bytes} bytes: not sent, over the reply's media limit of {} bytes ({} already used)]",
                self.limits.payload_bytes, self.payload_bytes
            );
        }
        (self.prepare)(&mut block);
        let fields = content::fields_bytes(&block);
        if self.fields_bytes + fields > self.limits.fields_bytes {
            return format!(
                "[{kind} {mime_type}, {bytes} bytes: not sent, its other fields (uri, mimeType, annotations, _meta) take {fields} bytes, over the {} bytes the reply keeps for them ({} already used)]",
                self.limits.fields_bytes, self.fields_bytes
            );
        }
        self.payload_bytes += bytes;
        self.fields_bytes += fields;
        self.blocks.push(block);
        format!(
            "[{kind} {mime_type}, {bytes} bytes: sent as content block {}]",
            self.first_index + self.blocks.len() - 1
        )
    }
}

/// One media block recognised in a value.
struct Media {
    kind: &'static str,
    mime_type: String,
    /// Decoded size.
    bytes: usize,
    block: ContentBlock,
}

impl Media {
    /// `{type: "image"|"audio", data, mimeType}` with base64 `data` and a MIME type of its kind,
    /// or `{type: "resource", resource: {uri, blob, mimeType?}}` with base64 `blob`.
    fn of(value: &Value) -> Option<Media> {
        let map = value.as_object()?;
        let kind = match map.get("type")?.as_str()? {
            "image" => "image",
            "audio" => "audio",
            "resource" => "resource",
            _ => return None,
        };
        if !only_keys(
            map,
            &[
                "type",
                "data",
                "mimeType",
                "resource",
                "annotations",
                "_meta",
            ],
        ) {
            return None;
        }
        let (data, mime_type) = if kind == "resource" {
            let resource = map.get("resource")?.as_object()?;
            resource.get("uri")?.as_str()?;
            let mime = resource
                .get("mimeType")
                .and_then(Value::as_str)
                .unwrap_or("application/octet-stream");
            (resource.get("blob")?.as_str()?, mime)
        } else {
            let mime = map.get("mimeType")?.as_str()?;
            let (top, sub) = mime.split_once('/')?;
            if top != kind || sub.is_empty() {
                return None;
            }
            (map.get("data")?.as_str()?, mime)
        };
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(data)
            .ok()?
            .len();
        let block = serde_json::from_value(value.clone()).ok()?;
        Some(Media {
            kind,
            mime_type: mime_type.to_string(),
            bytes,
            block,
        })
    }
}

fn only_keys(map: &Map<String, Value>, allowed: &[&str]) -> bool {
    map.keys().all(|k| allowed.contains(&k.as_str()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const ROOMY: MediaLimits = MediaLimits {
        payload_bytes: 1 << 20,
        fields_bytes: 1 << 20,
    };

    fn take(value: &mut Value, limits: MediaLimits) -> Vec<ContentBlock> {
        take_blocks(value, limits, 1, &|_| {}).blocks
    }

    fn png() -> Value {
        json!({"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"})
    }

    #[test]
    fn an_image_anywhere_near_the_top_leaves_the_value() {
        let mut value = json!({"content": [{"type": "text", "text": "caption"}, png()]});
        let blocks = take(&mut value, ROOMY);
        assert_eq!(blocks.len(), 1);
        assert!(matches!(blocks[0], ContentBlock::Image(_)));
        assert_eq!(
            value["content"][1],
            "[image image/png, 8 bytes: sent as content block 1]"
        );
        let mut alone = png();
        assert_eq!(take(&mut alone, ROOMY).len(), 1);
    }

    #[test]
    fn blocks_over_the_limit_or_malformed_stay() {
        let mut value = json!([png(), png()]);
        let blocks = take(
            &mut value,
            MediaLimits {
                payload_bytes: 10,
                ..ROOMY
            },
        );
        assert_eq!(blocks.len(), 1);
        assert!(
            value[1]
                .as_str()
                .unwrap()
                .contains("not sent, over the reply's media limit")
        );
        let mut bad = json!([
            {"type": "image", "data": "not base64!", "mimeType": "image/png"},
            {"type": "image", "data": "aGk=", "mimeType": "text/html"},
            {"type": "image", "data": "aGk=", "mimeType": "image/png", "extra": 1},
        ]);
        let before = bad.clone();
        assert!(take(&mut bad, ROOMY).is_empty());
        assert_eq!(bad, before);
    }

    #[test]
    fn binary_resources_and_audio_are_blocks_too() {
        let mut value = json!([
            {"type": "audio", "data": "aGk=", "mimeType": "audio/wav"},
            {"type": "resource", "resource": {"uri": "file:///a.bin", "blob": "aGk=", "mimeType": "application/pdf"}},
            {"type": "resource", "resource": {"uri": "file:///a.txt", "text": "stays"}},
        ]);
        let blocks = take(&mut value, ROOMY);
        assert_eq!(blocks.len(), 2);
        assert_eq!(
            value[1],
            "[resource application/pdf, 2 bytes: sent as content block 2]"
        );
        assert_eq!(value[2]["resource"]["text"], "stays");
    }

    #[test]
    fn depth_and_count_are_bounded() {
        let mut deep = json!({"a": {"b": {"c": {"d": {"e": png()}}}}});
        assert!(take(&mut deep, ROOMY).is_empty());
        let mut many = Value::Array(vec![png(); 40]);
        assert_eq!(take(&mut many, ROOMY).len(), MAX_BLOCKS);
    }

    #[test]
    fn fields_count_and_pass_the_checkpoint() {
        let uri = format!("x:{}", "U".repeat(3 << 20));
        let mut value = json!([
            {"type": "resource", "resource": {"uri": uri, "blob": "aGk="}},
            {"type": "resource", "resource": {"uri": "crm://a/ada@example.com/s.pdf", "blob": "aGk="}},
        ]);
        let limits = MediaLimits {
            payload_bytes: 1 << 20,
            fields_bytes: 10_000,
        };
        let redact = |block: &mut ContentBlock| {
            let mut v = serde_json::to_value(&*block).unwrap();
            v["resource"]["uri"] = json!(
                v["resource"]["uri"]
                    .as_str()
                    .unwrap()
                    .replace("ada@example.com", "[EMAIL]")
            );
            *block = serde_json::from_value(v).unwrap();
        };
        let taken = take_blocks(&mut value, limits, 1, &redact);
        assert_eq!(taken.blocks.len(), 1);
        assert!(
            value[0].as_str().unwrap().contains("its other fields"),
            "{}",
            value[0]
        );
        let sent = serde_json::to_string(&taken.blocks[0]).unwrap();
        assert!(
            sent.contains("crm://a/[EMAIL]/s.pdf") && !sent.contains("ada@"),
            "{sent}"
        );
        assert_eq!(taken.fields_bytes, content::fields_bytes(&taken.blocks[0]));
    }
}
