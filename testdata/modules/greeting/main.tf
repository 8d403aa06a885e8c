# A small module used by oci-tofu's end-to-end tests: it is pushed with
# `oci-tofu push module` and installed by real `tofu init` from oci://.

variable "name" {
  type    = string
  default = "world"
}

module "shout" {
  source = "./modules/shout"
  text   = "hello, ${var.name}"
}

output "greeting" {
  value = "Hello, ${var.name}!"
}

output "shouted" {
  value = module.shout.text
}
