terraform {
  required_version = ">= 1.9.0"
}

resource "terraform_data" "this" {
  input = var.name
}

resource "terraform_data" "each" {
  for_each = toset(["a", "b"])
  input    = each.key
}

data "terraform_remote_state" "shared" {
  backend = "local"
  config = {
    path = "shared.tfstate"
  }
}

module "network" {
  source = "./modules/network"
  cidr   = "10.0.0.0/16"
}

module "secrets" {
  source = "./modules/secrets"
  seed   = var.name
}

module "consul" {
  source  = "hashicorp/consul/aws"
  version = "~> 0.11.0"
}
