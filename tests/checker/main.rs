//! Integration tests of the linearizability checker through overcast: the recorded corpora and random histories (one binary, one link).

mod lin_corpus;
mod lin_random;
