// Package depfloors holds floors.txt, the oldest version of each listed
// module the repository's go.mod may require, and the test that enforces it.
package depfloors
