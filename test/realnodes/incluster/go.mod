module nodecare.test/realnodes/incluster

go 1.26.0
