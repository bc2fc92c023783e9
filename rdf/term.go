package rdf

import (
	"strings"
)

// Kind tells what a Term is.
type Kind uint8

const (
	KindNone    Kind = iota // the zero Term
	KindIRI                 // an IRI reference
	KindBlank               // a blank node; Value is its label, without "_:"
	KindLiteral             // a literal; Value is its lexical form
)

// Well-known datatype IRIs.
const (
	XSDString     = "http://www.w3.org/2001/XMLSchema#string"
	RDFLangString = "http://www.w3.org/1999/02/22-rdf-syntax-ns#langString"
	RDFNS         = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
)

// Term is an RDF term. It is a comparable value: terms are equal exactly
// when they denote the same RDF term (blank nodes: the same label), so a
// Term can be a map key. Literals are kept in RDF 1.1 form: a plain literal
// has Datatype XSDString and a language-tagged one RDFLangString with a
// lower-cased Lang; use Literal, LangLiteral and TypedLiteral to build them.
type Term struct {
	Kind     Kind
	Value    string // IRI, blank node label or lexical form
	Lang     string // language tag of a KindLiteral, lower-case; "" otherwise
	Datatype string // datatype IRI of a KindLiteral; "" otherwise
}

// IRI returns the IRI term s.
func IRI(s string) Term { return Term{Kind: KindIRI, Value: s} }

// Blank returns the blank node with label id (without "_:").
func Blank(id string) Term { return Term{Kind: KindBlank, Value: id} }

// Literal returns the simple literal lex (datatype xsd:string).
func Literal(lex string) Term { return Term{Kind: KindLiteral, Value: lex, Datatype: XSDString} }

// LangLiteral returns the literal lex with language tag lang.
func LangLiteral(lex, lang string) Term {
	return Term{Kind: KindLiteral, Value: lex, Lang: strings.ToLower(lang), Datatype: RDFLangString}
}

// TypedLiteral returns the literal lex with datatype dt. An empty dt means
// xsd:string.
func TypedLiteral(lex, dt string) Term {
	if dt == "" {
		dt = XSDString
	}
	return Term{Kind: KindLiteral, Value: lex, Datatype: dt}
}

// IsIRI, IsBlank and IsLiteral tell the kind of t.
func (t Term) IsIRI() bool     { return t.Kind == KindIRI }
func (t Term) IsBlank() bool   { return t.Kind == KindBlank }
func (t Term) IsLiteral() bool { return t.Kind == KindLiteral }

// IsZero reports whether t is the zero Term.
func (t Term) IsZero() bool { return t.Kind == KindNone }

// Triple is one RDF statement.
type Triple struct {
	S, P, O Term
}
