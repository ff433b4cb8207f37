package app

// FieldError is a problem with one field of what a caller gave: the CLI shows it against its
// flag, the UI next to its form field. Msg says what is wrong and what would be right, in words
// that do not assume how the value was given (a flag, a form, stdin), and reads on from the
// field's name: Field + " " + Msg is a sentence ("base URL is required for ...").
type FieldError struct {
	Field string // one of the Field constants, or a SettingName
	Msg   string
}

func (e *FieldError) Error() string { return e.Field + " " + e.Msg }

// The fields a FieldError names.
const (
	FieldName     = "account name"
	FieldKind     = "kind"
	FieldBaseURL  = "base URL"
	FieldAPI      = "API"
	FieldKey      = "API key"
	FieldPosition = "position"
	FieldAlias    = "alias"
	FieldReserve  = "reserve"
)

func fieldError(field, msg string) error { return &FieldError{Field: field, Msg: msg} }
