// Package english holds the rules of English grammar the program's
// messages share: so far, a noun's form for a count.
package english
