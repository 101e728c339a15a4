package wire

import "strings"

// Content types of InputContent.
const (
	ContentText  = "input_text"
	ContentImage = "input_image"
)

// InputContent is one content item: text or an image reference. The same
// item is carried by a MessageInput, a function result and a tool
// observation, and validate is its one validator for all three.
type InputContent struct {
	Type     string `json:"type"`
	Text     string `json:"text,omitempty"`
	ImageURL string `json:"image_url,omitempty"`
}

// contentText is the rule for the text of an input_text item: the one rule
// on which the places that carry content items differ.
type contentText uint8

const (
	// textMayBeEmpty accepts empty or blank text. A function may return
	// empty text, and a message judges its text as a whole, not item by
	// item (MessageInput needs non-blank text or an image in each message).
	// InputContent cannot tell empty text from missing text, so both pass.
	textMayBeEmpty contentText = iota
	// textNonEmpty requires at least one character, never trimmed: a tool
	// observation has no message around its items, so each item must carry
	// something on its own.
	textNonEmpty
)

// validate checks one content item with paths relative to the item: a known
// type, the member of that type present (text as the rule says, a non-blank
// image_url), and the other type's member absent.
func (ct InputContent) validate(text contentText) *FieldError {
	c := newChecker("")
	switch ct.Type {
	case ContentText:
		if text == textNonEmpty && ct.Text == "" {
			c.fail("text", RuleRequired, "input_text needs text")
		}
		c.forbidden("image_url", ct.ImageURL != "", "input_text carries no image_url")
	case ContentImage:
		c.forbidden("text", ct.Text != "", "input_image carries no text")
		if strings.TrimSpace(ct.ImageURL) == "" {
			c.fail("image_url", RuleRequired, "input_image needs an image_url")
		}
	default:
		c.oneOf("type", ct.Type, ContentText, ContentImage)
	}
	return c.first
}

// isImage reports whether the item is an image: what a text-only transport
// rejects and what the message_images and function_result_images
// capabilities gate.
func (ct InputContent) isImage() bool { return ct.Type == ContentImage }
